// The host user's live rules in the running supervisor (network.h: change_policy, expire_rules), and the
// refusals pending their approval (note_refusal, describe_pending).
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "audit/events.h"
#include "audit/sha256.h"
#include "core/json_fields.h"
#include "net/net_event.h"
#include "net/policy_channel.h"
#include "net/ssh_agent_filter.h"
#include "supervisor/log_line.h"
#include "supervisor/network.h"

namespace tnk::supervisor {
namespace {

// The proxy applies a list in microseconds; a proxy that does not answer within this is stuck.
constexpr std::chrono::milliseconds kProxyPolicyTimeout{2000};

std::string policy_hash(const net::PolicyInForce& policy) { return audit::sha256_hex(net::canonical_text(policy)); }

}  // namespace

net::PolicyInForce Network::in_force() const {
  // The rules change what the egress proxy lets through (allowlist, open): under another policy they are
  // kept, not applied. rules_ as held, not as the clock says: a rule is in force until expire_rules ends
  // it (and records that it did).
  bool applies = has_egress_proxy(config_.network);
  std::vector<std::string> base = config_.allow;  // policy_in_force sorts and dedupes
  for (std::string& entry : ssh_route_entries()) base.push_back(std::move(entry));
  return net::policy_in_force(to_string(config_.network), base, applies ? rules_ : std::vector<net::LiveRule>{},
                              std::numeric_limits<int64_t>::min());
}

// Each SSH route's host:port: the proxy passes SSH to it, and to no other host (the plan gives a sandbox
// routes only under allowlist and open).
std::vector<std::string> Network::ssh_route_entries() const {
  std::vector<std::string> entries;
  for (const net::SshRoute& route : config_.ssh_routes) entries.push_back(net::ssh_route_target(route));
  return entries;
}

uint64_t Network::apply_rules(std::vector<net::LiveRule> rules, const PolicyChange& change) {
  std::string old_hash = policy_hash(in_force());
  rules_ = std::move(rules);
  net::PolicyInForce policy = in_force();
  pending_requests_.drop_decided(policy.allow, policy.deny);
  uint64_t cut = 0;
  if (proxy_ != 0 && proxy_policy_.valid()) {
    auto sent = net::send_policy(proxy_policy_.get(), policy.allow, policy.deny, kProxyPolicyTimeout);
    if (sent) {
      cut = *sent;
    } else {
      // A proxy that cannot take the new lists must not go on with the old ones: the restart (relay_ended)
      // starts it with the lists in force.
      log_line("the egress proxy did not take the new policy (" + sent.error().message + "); restarting it");
      ::kill(proxy_, SIGKILL);
    }
  }
  std::optional<std::string> until;
  if (change.until_ms) until = net::utc_text(*change.until_ms);
  audit_.write(audit::policy_change(
      config_.id, {change.action, change.rule, change.who, until, old_hash, policy_hash(policy), true, cut}));
  log_line("policy " + change.action + " " + change.rule + " by " + change.who + ": now " + policy_hash(policy) +
           (cut > 0 ? ", " + std::to_string(cut) + " connection(s) cut" : ""));
  return cut;
}

Result<nlohmann::json> Network::change_policy(std::vector<net::LiveRule> rules, const PolicyChange& change) {
  if (!has_egress_proxy(config_.network)) {
    return usage_error("sandbox " + config_.id + " runs under the " + to_string(config_.network) +
                           " policy, which has no egress proxy: tnk sandbox allow and deny change what the proxy "
                           "of allowlist and open lets through",
                       "start it with --network allowlist (tnk sandbox stop, then tnk sandbox start --network "
                       "allowlist)");
  }
  uint64_t cut = apply_rules(net::unexpired(rules, net::unix_ms_now()), change);
  nlohmann::json described = describe_policy();
  described["cut"] = cut;
  return described;
}

void Network::expire_rules() {
  int64_t now = net::unix_ms_now();
  // One record per rule that ends; the others stay.
  for (;;) {
    auto due = std::find_if(rules_.begin(), rules_.end(),
                            [now](const net::LiveRule& rule) { return rule.expires_ms && *rule.expires_ms <= now; });
    if (due == rules_.end()) return;
    net::LiveRule ended = *due;
    std::vector<net::LiveRule> rest = rules_;
    std::erase(rest, ended);
    apply_rules(std::move(rest), {"expire", ended.entry, "tnk", ended.expires_ms});
  }
}

void Network::note_refusal(const nlohmann::json& line) {
  // Only the allowlist policy's proxy: the provisioning proxy's refusals (labelled "provision") are not
  // the sandbox's policy, and an allow rule is refused under any other policy.
  if (config_.network != NetworkPolicy::kAllowlist) return;
  auto label = JsonFields(line, "a network event").optional_string("policy");
  if (!label || *label != to_string(config_.network)) return;
  pending_requests_.note(net::net_event_from_json(line), net::unix_ms_now());
}

nlohmann::json Network::describe_pending() const {
  return {{"policy", to_string(config_.network)}, {"requests", net::to_json(pending_requests_.entries())}};
}

nlohmann::json Network::describe_policy() const {
  net::PolicyInForce policy = in_force();
  bool applies = has_egress_proxy(config_.network);
  return {{"policy", policy.policy},
          {"hash", policy_hash(policy)},
          {"allow", policy.allow},
          {"deny", policy.deny},
          {"profile_allow", config_.allow},
          {"rules", net::to_json(rules_)},
          {"entries",
           net::policy_entries(config_.allow, applies ? rules_ : std::vector<net::LiveRule>{}, ssh_route_entries())},
          {"running", true}};
}

}  // namespace tnk::supervisor
