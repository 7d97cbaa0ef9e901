// The requests a sandbox's egress proxy refused because its allow-list does not list them, kept by the
// supervisor so that the host user can see them (`tnk sandbox pending`) and let one through (`tnk sandbox
// approve ID`, which is `tnk sandbox allow HOST:PORT` of its entry). One entry per host:port, counted.
// Bounded: a sandbox that asks for ever new names pushes out the entry seen least recently. Pure: the
// supervisor feeds it the proxy's decisions and every policy it puts in force.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "net/net_event.h"

namespace tnk::net {

struct PendingRequest {
  std::string id;    // 8 hex digits, drawn at random when the entry appears (never that of another entry)
  std::string host;  // lowercased, as the request named it
  uint16_t port = 0;
  std::string entry;                  // the rule approving it adds: host:port (an IPv6 literal in brackets)
  std::string reason;                 // kNotInAllowList or kPortNotInAllowList (listed, but on other ports)
  uint64_t count = 0;                 // refusals counted while it was pending
  int64_t first_ms = 0, last_ms = 0;  // Unix time, milliseconds
};

// A refusal that an allow rule of host:port would lift: not in the allow-list, with a host and port
// that make a rule.
bool awaits_approval(const NetEvent& event);

class PendingRequests {
 public:
  static constexpr std::size_t kMaxEntries = 256;

  // `seed` draws the IDs (the supervisor's is random: an ID seen before a restart names nothing after it).
  explicit PendingRequests(uint64_t seed, std::size_t capacity = kMaxEntries) : random_(seed), capacity_(capacity) {}

  // Counts `event` under its host:port when it awaits approval; a new entry beyond the capacity
  // replaces the one seen least recently. False when the event is no such refusal.
  bool note(const NetEvent& event, int64_t now_ms);
  // Drops the entries a policy decided: those its `allow` lets through and those a `deny` covers.
  void drop_decided(const std::vector<std::string>& allow, const std::vector<std::string>& deny);

  const PendingRequest* find(std::string_view id) const;
  const std::vector<PendingRequest>& entries() const { return entries_; }  // oldest first

 private:
  std::string new_id();

  std::vector<PendingRequest> entries_;
  std::mt19937_64 random_;
  std::size_t capacity_;
};

// {"id", "host", "port", "entry", "reason", "count", "first_seen", "first_seen_ms", "last_seen",
// "last_seen_ms"} (docs/json-output.md); the list, oldest first.
nlohmann::json to_json(const PendingRequest& request);
nlohmann::json to_json(const std::vector<PendingRequest>& requests);

}  // namespace tnk::net
