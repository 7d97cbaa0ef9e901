// `tnk sandbox allow`, `deny` and `policy`: the host user's network rules of a sandbox
// (net/live_policy.h), put in force by the running supervisor at once and stored in the sandbox's
// state (sandbox/live_rules.h) for every later start.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "context/context.h"
#include "core/result.h"
#include "net/live_policy.h"
#include "sandbox/resolve.h"

namespace tnk::backend {

struct PolicyEdit {
  net::RuleAction action = net::RuleAction::kAllow;
  std::string entry;                           // parse_rule_entry's
  std::optional<std::chrono::seconds> period;  // --for; none: until removed
};

struct PolicyView {
  std::string id;
  bool running = false;  // false: the rules are recorded for the next start
  // {"policy", "hash", "allow", "deny", "profile_allow", "rules", "running"} (docs/network.md), and
  // "cut" after an edit of a running sandbox.
  nlohmann::json policy;
};

Result<PolicyView> show_policy(Context& ctx, const sandbox::ResolveOptions& options);
// Under the sandbox's lock: the rule replaces any rule for the same entry, the running supervisor puts
// the result in force (and writes the policy_change record) before it is stored; a sandbox that does not
// run stores it and gets the record in its audit log (`audit = true`).
Result<PolicyView> edit_policy(Context& ctx, const sandbox::ResolveOptions& options, const PolicyEdit& edit);

}  // namespace tnk::backend
