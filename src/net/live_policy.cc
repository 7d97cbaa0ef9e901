#include "net/live_policy.h"

#include <algorithm>
#include <cctype>
#include <ctime>

#include "core/json_fields.h"
#include "net/domain_match.h"

namespace tnk::net {
namespace {

constexpr std::chrono::seconds kLongestRule = std::chrono::hours(24 * 30);

void sort_unique(std::vector<std::string>& entries) {
  std::sort(entries.begin(), entries.end());
  entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
}

}  // namespace

Result<std::string> parse_rule_entry(std::string_view text) {
  std::string entry(text);
  std::transform(entry.begin(), entry.end(), entry.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (entry.empty() || !check_allow_entry(entry).ok()) {
    return usage_error("invalid host '" + std::string(text) + "'",
                       "write HOST or HOST:PORT: a name (example.org), its subdomains (*.example.org) or an IP "
                       "literal, PORT 1-65535 (without one, 80 and 443): tnk sandbox allow example.org:8443");
  }
  return entry;
}

Result<std::chrono::seconds> parse_rule_duration(std::string_view text) {
  auto bad = [&] {
    return usage_error("invalid duration '" + std::string(text) + "'",
                       "write a whole number with s, m, h or d, from 1s to 30d: --for 10m");
  };
  if (text.size() < 2 || text.size() > 9) return bad();
  long long count = 0;
  for (char c : text.substr(0, text.size() - 1)) {
    if (c < '0' || c > '9') return bad();
    count = count * 10 + (c - '0');
  }
  long long unit = 0;
  switch (text.back()) {
    case 's': unit = 1; break;
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    case 'd': unit = 86400; break;
    default: return bad();
  }
  std::chrono::seconds duration(count * unit);
  if (duration < std::chrono::seconds(1) || duration > kLongestRule) return bad();
  return duration;
}

std::vector<LiveRule> unexpired(const std::vector<LiveRule>& rules, int64_t now_ms) {
  std::vector<LiveRule> out;
  for (const LiveRule& rule : rules) {
    if (!rule.expires_ms || *rule.expires_ms > now_ms) out.push_back(rule);
  }
  return out;
}

std::vector<LiveRule> with_rule(const std::vector<LiveRule>& rules, const LiveRule& rule, int64_t now_ms) {
  std::vector<LiveRule> out = unexpired(rules, now_ms);
  std::erase_if(out, [&](const LiveRule& r) { return r.entry == rule.entry; });
  out.push_back(rule);
  return out;
}

std::optional<int64_t> next_expiry(const std::vector<LiveRule>& rules) {
  std::optional<int64_t> next;
  for (const LiveRule& rule : rules) {
    if (rule.expires_ms && (!next || *rule.expires_ms < *next)) next = rule.expires_ms;
  }
  return next;
}

PolicyInForce policy_in_force(const std::string& policy, const std::vector<std::string>& base,
                              const std::vector<LiveRule>& rules, int64_t now_ms) {
  PolicyInForce out{policy, base, {}};
  for (const LiveRule& rule : unexpired(rules, now_ms)) {
    (rule.action == RuleAction::kAllow ? out.allow : out.deny).push_back(rule.entry);
  }
  sort_unique(out.allow);
  sort_unique(out.deny);
  return out;
}

std::string canonical_text(const PolicyInForce& policy) {
  std::string text = "policy " + policy.policy + "\n";
  for (const std::string& entry : policy.allow) text += "allow " + entry + "\n";
  for (const std::string& entry : policy.deny) text += "deny " + entry + "\n";
  return text;
}

nlohmann::json policy_entries(const std::vector<std::string>& base, const std::vector<LiveRule>& rules,
                              const std::vector<std::string>& ssh_routes) {
  nlohmann::json out = nlohmann::json::array();
  auto add_allowed = [&](const std::vector<std::string>& entries, const char* source) {
    for (const std::string& entry : entries) {
      out.push_back({{"entry", entry},
                     {"action", "allow"},
                     {"source", source},
                     {"until", nullptr},
                     {"enforced", "proxy: " + enforcement_text(entry, false)}});
    }
  };
  add_allowed(base, "network.allow");
  add_allowed(ssh_routes, "[[ssh_routes]] of tnk.toml");
  for (const LiveRule& rule : rules) {
    bool deny = rule.action == RuleAction::kDeny;
    out.push_back({{"entry", rule.entry},
                   {"action", to_string(rule.action)},
                   {"source", "tnk sandbox " + to_string(rule.action) + " (" + rule.who + ")"},
                   {"until", rule.expires_ms ? nlohmann::json(utc_text(*rule.expires_ms)) : nlohmann::json(nullptr)},
                   {"enforced", "proxy: " + enforcement_text(rule.entry, deny)}});
  }
  return out;
}

std::string to_string(RuleAction action) { return action == RuleAction::kAllow ? "allow" : "deny"; }

std::string describe(const LiveRule& rule) {
  std::string text = to_string(rule.action) + " " + rule.entry;
  if (rule.expires_ms) text += " (until " + utc_text(*rule.expires_ms) + ")";
  return text;
}

nlohmann::json to_json(const LiveRule& rule) {
  nlohmann::json json = {{"action", to_string(rule.action)},
                         {"entry", rule.entry},
                         {"added", utc_text(rule.added_ms)},
                         {"added_ms", rule.added_ms},
                         {"who", rule.who}};
  json["expires_ms"] = rule.expires_ms ? nlohmann::json(*rule.expires_ms) : nlohmann::json(nullptr);
  json["expires"] = rule.expires_ms ? nlohmann::json(utc_text(*rule.expires_ms)) : nlohmann::json(nullptr);
  return json;
}

nlohmann::json to_json(const std::vector<LiveRule>& rules) {
  nlohmann::json out = nlohmann::json::array();
  for (const LiveRule& rule : rules) out.push_back(to_json(rule));
  return out;
}

Result<std::vector<LiveRule>> rules_from_json(const nlohmann::json& json) {
  if (!json.is_array()) return failed("network rules: not a list");
  std::vector<LiveRule> rules;
  for (const nlohmann::json& item : json) {
    if (!item.is_object()) return failed("network rules: a rule that is not an object");
    JsonFields fields(item, "network rule");
    TNK_ASSIGN_OR_RETURN(std::string action, fields.string("action"));
    if (action != "allow" && action != "deny") return fields.error("action", "must be allow or deny");
    TNK_ASSIGN_OR_RETURN(std::string entry, fields.string("entry"));
    if (!check_allow_entry(entry).ok()) return fields.error("entry", "is not an allow-list entry");
    TNK_ASSIGN_OR_RETURN(long long added, fields.optional_integer("added_ms", 0, 0));
    TNK_ASSIGN_OR_RETURN(std::string who, fields.optional_string("who"));
    LiveRule rule{action == "allow" ? RuleAction::kAllow : RuleAction::kDeny, entry, added, std::nullopt, who};
    if (fields.has("expires_ms")) {
      TNK_ASSIGN_OR_RETURN(long long expires, fields.integer("expires_ms", 0));
      rule.expires_ms = expires;
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string utc_text(int64_t unix_ms) {
  std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  char text[32] = "?";
  if (::gmtime_r(&seconds, &tm) != nullptr) std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace tnk::net
