// The rules a host user adds to a sandbox's allow-list from the host (`tnk sandbox allow`, `deny`),
// running or not, and the policy in force they make with the profile's network.allow. Pure: the
// state file, the supervisor and the proxy keep and apply what these functions compute.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace tnk::net {

enum class RuleAction { kAllow, kDeny };

struct LiveRule {
  RuleAction action = RuleAction::kAllow;
  std::string entry;                  // an allow-list entry (domain_match.h), as normalized by parse_rule_entry
  int64_t added_ms = 0;               // Unix time, milliseconds
  std::optional<int64_t> expires_ms;  // Unix time; none: until removed, or the sandbox is deleted
  std::string who;                    // the host user who asked
  bool operator==(const LiveRule&) const = default;
};

// HOST[:PORT] as the command line gives it: a name, *.name or an IP literal, lowercased. A registry
// (@debian) or anything else is a usage error naming it, with the accepted forms.
Result<std::string> parse_rule_entry(std::string_view text);
// A rule's lifetime: a whole number with s, m, h or d ("30s", "10m"), at least 1 s, at most 30 days.
Result<std::chrono::seconds> parse_rule_duration(std::string_view text);

// The rules still in force at `now_ms` (an expired rule has ended, whether anyone saw it end).
std::vector<LiveRule> unexpired(const std::vector<LiveRule>& rules, int64_t now_ms);
// `rules` in force at now_ms with `rule` in place of any rule for the same entry.
std::vector<LiveRule> with_rule(const std::vector<LiveRule>& rules, const LiveRule& rule, int64_t now_ms);
// The earliest expiry among `rules`.
std::optional<int64_t> next_expiry(const std::vector<LiveRule>& rules);

// What the proxy decides by: every name of `allow` (the profile's and the live allows) except those a
// deny covers (domain_denied).
struct PolicyInForce {
  std::string policy;              // "allowlist"
  std::vector<std::string> allow;  // sorted, unique
  std::vector<std::string> deny;   // sorted, unique
};
PolicyInForce policy_in_force(const std::string& policy, const std::vector<std::string>& base,
                              const std::vector<LiveRule>& rules, int64_t now_ms);
// The text a policy's hash covers: one line per field, entries in order. Equal policies, equal text.
std::string canonical_text(const PolicyInForce& policy);

// Every entry of a policy, what asked for it and how the proxy enforces it (item 3 of issue 34):
// [{"entry", "action", "source": "network.allow", "[[ssh_routes]] of tnk.toml" or "tnk sandbox allow
// (alice)", "until": null or when the rule ends, "enforced": "proxy: name example.org, ports 80 and 443"}],
// the profile's first, then the SSH routes' host:port, then the rules.
nlohmann::json policy_entries(const std::vector<std::string>& base, const std::vector<LiveRule>& rules,
                              const std::vector<std::string>& ssh_routes = {});

std::string to_string(RuleAction action);  // "allow", "deny"
// "allow example.org (until 2026-12-06T12:00:00Z)"
std::string describe(const LiveRule& rule);
nlohmann::json to_json(const LiveRule& rule);
nlohmann::json to_json(const std::vector<LiveRule>& rules);
// A stored or received list; an invalid rule is an error naming the field.
Result<std::vector<LiveRule>> rules_from_json(const nlohmann::json& json);

// Milliseconds since the Unix epoch, and its ISO 8601 UTC text ("2026-12-06T12:00:00Z").
int64_t unix_ms_now();
std::string utc_text(int64_t unix_ms);

}  // namespace tnk::net
