#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "audit/sha256.h"
#include "net/domain_match.h"
#include "net/live_policy.h"

namespace tnk::net {
namespace {

constexpr int64_t kNow = 1'800'000'000'000;  // 2027-01-15

LiveRule allow(const std::string& entry, std::optional<int64_t> expires = std::nullopt) {
  return {RuleAction::kAllow, entry, kNow - 1000, expires, "alice"};
}
LiveRule deny(const std::string& entry) { return {RuleAction::kDeny, entry, kNow - 1000, std::nullopt, "alice"}; }

TEST(LivePolicy, HostsAreCheckedAndLowercased) {
  EXPECT_EQ(*parse_rule_entry("Registry.Example.org:8443"), "registry.example.org:8443");
  EXPECT_EQ(*parse_rule_entry("*.example.org"), "*.example.org");
  EXPECT_EQ(*parse_rule_entry("[2001:db8::1]:443"), "[2001:db8::1]:443");
  for (const char* bad :
       {"", "@debian", "example.org:0", "example.org:70000", "exa mple.org", "http://x.org", "a..b"}) {
    auto parsed = parse_rule_entry(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.error().kind, ErrorKind::kUsage);
    EXPECT_EQ(parsed.error().message, "invalid host '" + std::string(bad) + "'");
    EXPECT_NE(parsed.error().hint.find("HOST:PORT"), std::string::npos);
  }
}

TEST(LivePolicy, DurationsHaveAUnitAndBounds) {
  EXPECT_EQ(*parse_rule_duration("3s"), std::chrono::seconds(3));
  EXPECT_EQ(*parse_rule_duration("10m"), std::chrono::minutes(10));
  EXPECT_EQ(*parse_rule_duration("2h"), std::chrono::hours(2));
  EXPECT_EQ(*parse_rule_duration("30d"), std::chrono::hours(24 * 30));
  for (const char* bad : {"", "3", "s", "0s", "-3s", "3x", "31d", "1.5h", "99999999999s"}) {
    auto parsed = parse_rule_duration(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.error().kind, ErrorKind::kUsage);
    EXPECT_EQ(parsed.error().message, "invalid duration '" + std::string(bad) + "'");
  }
}

TEST(LivePolicy, ARuleReplacesTheRuleForTheSameEntryAndExpiredRulesFallAway) {
  std::vector<LiveRule> rules = {allow("a.example"), allow("b.example", kNow - 1), allow("c.example", kNow + 5000)};
  auto changed = with_rule(rules, deny("a.example"), kNow);
  ASSERT_EQ(changed.size(), 2u);
  EXPECT_EQ(changed[0].entry, "c.example");
  EXPECT_EQ(changed[1], deny("a.example"));
  EXPECT_EQ(next_expiry(changed), kNow + 5000);
  EXPECT_EQ(unexpired(changed, kNow + 5000).size(), 1u);  // ends at its expiry, not after
  EXPECT_EQ(next_expiry({allow("a.example")}), std::nullopt);
}

TEST(LivePolicy, ThePolicyInForceAddsAllowsToTheProfileAndKeepsDeniesApart) {
  auto policy = policy_in_force("allowlist", {"z.example", "a.example"},
                                {allow("m.example"), deny("z.example"), allow("gone.example", kNow)}, kNow);
  EXPECT_EQ(policy.allow, (std::vector<std::string>{"a.example", "m.example", "z.example"}));
  EXPECT_EQ(policy.deny, (std::vector<std::string>{"z.example"}));
  EXPECT_EQ(canonical_text(policy),
            "policy allowlist\nallow a.example\nallow m.example\nallow z.example\ndeny z.example\n");
}

TEST(LivePolicy, TheHashFollowsThePolicyNotTheOrderOfItsRules) {
  auto hash = [](const PolicyInForce& p) { return audit::sha256_hex(canonical_text(p)); };
  auto one = policy_in_force("allowlist", {"a.example"}, {allow("b.example"), allow("c.example")}, kNow);
  auto two = policy_in_force("allowlist", {"a.example"}, {allow("c.example"), allow("b.example")}, kNow);
  auto three = policy_in_force("allowlist", {"a.example"}, {allow("c.example")}, kNow);
  EXPECT_EQ(hash(one), hash(two));
  EXPECT_NE(hash(one), hash(three));
  EXPECT_EQ(hash(one).size(), 64u);
}

TEST(LivePolicy, ADenyWithoutAPortCoversEveryPort) {
  std::string rule;
  EXPECT_TRUE(domain_denied({"example.org"}, "EXAMPLE.org.", 8443, &rule));
  EXPECT_EQ(rule, "example.org");
  EXPECT_TRUE(domain_denied({"*.example.org"}, "a.example.org", 22, nullptr));
  EXPECT_FALSE(domain_denied({"example.org:8443"}, "example.org", 443, nullptr));
  EXPECT_FALSE(domain_denied({"example.org"}, "example.net", 443, nullptr));
}

TEST(LivePolicy, RulesRoundTripThroughJsonAndBadOnesAreNamed) {
  std::vector<LiveRule> rules = {allow("a.example", kNow + 3000), deny("b.example:22")};
  auto back = rules_from_json(to_json(rules));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, rules);
  EXPECT_EQ(to_json(rules)[0]["expires"], "2027-01-15T08:00:03Z");
  auto bad = rules_from_json(nlohmann::json::array({{{"action", "maybe"}, {"entry", "a.example"}}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'action'"), std::string::npos);
  EXPECT_FALSE(rules_from_json(nlohmann::json::array({{{"action", "allow"}, {"entry", "@npm"}}})).ok());
  EXPECT_EQ(describe(allow("a.example", kNow)), "allow a.example (until 2027-01-15T08:00:00Z)");
}

// Issue 34 item 3: every entry says what asked for it and how the proxy enforces it.
TEST(LivePolicy, EveryEntrySaysWhereItComesFromAndHowItIsEnforced) {
  auto entries = policy_entries({"example.org"}, {allow("*.example.net:8443", kNow + 3000), deny("192.0.2.7")});
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0]["source"], "network.allow");
  EXPECT_EQ(entries[0]["enforced"], "proxy: name example.org, ports 80 and 443");
  EXPECT_EQ(entries[0]["until"], nullptr);
  EXPECT_EQ(entries[1]["source"], "tnk sandbox allow (alice)");
  EXPECT_EQ(entries[1]["enforced"], "proxy: subdomains of example.net, port 8443");
  EXPECT_EQ(entries[1]["until"], "2027-01-15T08:00:03Z");
  EXPECT_EQ(entries[2]["action"], "deny");
  EXPECT_EQ(entries[2]["enforced"], "proxy: address 192.0.2.7, every port");
}

}  // namespace
}  // namespace tnk::net
