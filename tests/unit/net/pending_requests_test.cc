#include "net/pending_requests.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace tnk::net {
namespace {

constexpr int64_t kSeenAt = 1'800'000'000'000;  // 2027-01-15

NetEvent refusal(const std::string& host, uint16_t port, const char* reason = kNotInAllowList) {
  NetEvent event;
  event.host = host;
  event.port = port;
  event.reason = reason;
  return event;
}

TEST(PendingRequests, RepeatsOfAHostAndPortAreOneEntryCountedWithFirstAndLastSeen) {
  PendingRequests pending(1);
  EXPECT_TRUE(pending.note(refusal("Registry.Example.org", 8443), kSeenAt));
  EXPECT_TRUE(pending.note(refusal("registry.example.org", 8443), kSeenAt + 500));
  EXPECT_TRUE(pending.note(refusal("registry.example.org", 8443, kPortNotInAllowList), kSeenAt + 900));
  EXPECT_TRUE(pending.note(refusal("registry.example.org", 443), kSeenAt + 1000));
  ASSERT_EQ(pending.entries().size(), 2u);
  const PendingRequest& first = pending.entries()[0];
  EXPECT_EQ(first.host, "registry.example.org");
  EXPECT_EQ(first.port, 8443);
  EXPECT_EQ(first.entry, "registry.example.org:8443");
  EXPECT_EQ(first.count, 3u);
  EXPECT_EQ(first.first_ms, kSeenAt);
  EXPECT_EQ(first.last_ms, kSeenAt + 900);
  EXPECT_EQ(first.reason, kPortNotInAllowList);
  EXPECT_EQ(pending.entries()[1].entry, "registry.example.org:443");
  EXPECT_EQ(pending.entries()[1].count, 1u);
}

TEST(PendingRequests, OnlyRefusalsAnAllowRuleWouldLiftArePending) {
  PendingRequests pending(1);
  NetEvent allowed = refusal("a.example", 443);
  allowed.allowed = true;
  EXPECT_FALSE(pending.note(allowed, kSeenAt));
  EXPECT_FALSE(pending.note(refusal("a.example", 443, "denied (a.example)"), kSeenAt));
  EXPECT_FALSE(pending.note(refusal("a.example", 443, "host-internal address (loopback)"), kSeenAt));
  EXPECT_FALSE(pending.note(refusal("", 443), kSeenAt));              // the head could not be parsed
  EXPECT_FALSE(pending.note(refusal("a.example", 0), kSeenAt));       // no port
  EXPECT_FALSE(pending.note(refusal("exa mple.org", 443), kSeenAt));  // makes no rule
  EXPECT_TRUE(pending.entries().empty());
  // An IPv6 literal makes a rule in brackets.
  EXPECT_TRUE(pending.note(refusal("2001:db8::1", 443), kSeenAt));
  EXPECT_EQ(pending.entries().at(0).entry, "[2001:db8::1]:443");
}

TEST(PendingRequests, IdsAreShortStableAndDistinct) {
  PendingRequests pending(7);
  for (int i = 0; i < 50; ++i) pending.note(refusal("h" + std::to_string(i) + ".example", 443), kSeenAt + i);
  std::set<std::string> ids;
  for (const PendingRequest& r : pending.entries()) {
    EXPECT_EQ(r.id.size(), 8u);
    EXPECT_EQ(r.id.find_first_not_of("0123456789abcdef"), std::string::npos) << r.id;
    ids.insert(r.id);
  }
  EXPECT_EQ(ids.size(), 50u);
  std::string id = pending.entries()[3].id;
  pending.note(refusal("h3.example", 443), kSeenAt + 100);  // counted again: the same ID
  ASSERT_NE(pending.find(id), nullptr);
  EXPECT_EQ(pending.find(id)->entry, "h3.example:443");
  EXPECT_EQ(pending.find(id)->count, 2u);
  EXPECT_EQ(pending.find("00000000"), nullptr);
  // Another seed (a restarted supervisor) draws other IDs: an ID seen before names nothing after.
  PendingRequests restarted(8);
  restarted.note(refusal("h3.example", 443), kSeenAt);
  EXPECT_NE(restarted.entries()[0].id, id);
}

TEST(PendingRequests, TheTableIsBoundedAndDropsTheEntrySeenLeastRecently) {
  PendingRequests pending(1, 3);
  pending.note(refusal("a.example", 443), kSeenAt);
  pending.note(refusal("b.example", 443), kSeenAt + 1);
  pending.note(refusal("c.example", 443), kSeenAt + 2);
  pending.note(refusal("a.example", 443), kSeenAt + 3);  // a is now the most recent
  pending.note(refusal("d.example", 443), kSeenAt + 4);  // b makes room
  std::set<std::string> entries;
  for (const PendingRequest& r : pending.entries()) entries.insert(r.entry);
  EXPECT_EQ(entries, (std::set<std::string>{"a.example:443", "c.example:443", "d.example:443"}));
  for (int i = 0; i < 1000; ++i) pending.note(refusal("n" + std::to_string(i) + ".example", 443), kSeenAt + 10 + i);
  EXPECT_EQ(pending.entries().size(), 3u);
  EXPECT_EQ(PendingRequests::kMaxEntries, 256u);
}

TEST(PendingRequests, APolicyThatAllowsOrDeniesAnEntryDropsIt) {
  PendingRequests pending(1);
  pending.note(refusal("a.example", 8443), kSeenAt);
  pending.note(refusal("b.example", 443), kSeenAt);
  pending.note(refusal("c.example", 443), kSeenAt);
  pending.note(refusal("192.0.2.2", 41234), kSeenAt);
  std::string approved = pending.entries()[0].id;
  // The allow rule `approve` adds (a.example:8443), a deny of c.example; an allow of b.example's other
  // port decides nothing about b.example:443.
  pending.drop_decided({"a.example:8443", "b.example:80", "listed.example"}, {"c.example"});
  EXPECT_EQ(pending.find(approved), nullptr);
  ASSERT_EQ(pending.entries().size(), 2u);
  EXPECT_EQ(pending.entries()[0].entry, "b.example:443");
  EXPECT_EQ(pending.entries()[1].entry, "192.0.2.2:41234");
  pending.drop_decided({"192.0.2.2:41234"}, {});
  EXPECT_EQ(pending.entries().size(), 1u);
  // Refused again after it left, it comes back with another ID.
  pending.note(refusal("a.example", 8443), kSeenAt + 5);
  EXPECT_NE(pending.entries().back().id, approved);
}

TEST(PendingRequests, JsonNamesEveryField) {
  PendingRequests pending(1);
  pending.note(refusal("a.example", 8443), kSeenAt);
  nlohmann::json json = to_json(pending.entries());
  ASSERT_EQ(json.size(), 1u);
  EXPECT_EQ(json[0]["entry"], "a.example:8443");
  EXPECT_EQ(json[0]["host"], "a.example");
  EXPECT_EQ(json[0]["port"], 8443);
  EXPECT_EQ(json[0]["count"], 1);
  EXPECT_EQ(json[0]["reason"], "not in allow-list");
  EXPECT_EQ(json[0]["first_seen"], "2027-01-15T08:00:00Z");
  EXPECT_EQ(json[0]["last_seen_ms"], kSeenAt);
  EXPECT_EQ(json[0].size(), 10u);
}

}  // namespace
}  // namespace tnk::net
