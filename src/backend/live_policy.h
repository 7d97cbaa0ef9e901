// `tnk sandbox allow`, `deny` and `policy`: the host user's network rules of a sandbox
// (net/live_policy.h), put in force by the running supervisor at once and stored in the sandbox's
// state (sandbox/live_rules.h) for every later start; `pending` and `approve`: the refusals the
// supervisor keeps for the host user's approval, and the allow rule that approves one.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "context/context.h"
#include "core/result.h"
#include "net/live_policy.h"
#include "sandbox/resolve.h"

namespace tnk::backend {

struct PolicyEdit {
  std::optional<net::RuleAction> action;       // none: remove the rule for `entry` (`tnk sandbox policy --remove`)
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
// Under the sandbox's lock: the rule replaces (or a removal drops: not_found without one) any rule for the
// same entry, the running supervisor puts
// the result in force (and writes the policy_change record) before it is stored; a sandbox that does not
// run stores it and gets the record in its audit log (`audit = true`).
Result<PolicyView> edit_policy(Context& ctx, const sandbox::ResolveOptions& options, const PolicyEdit& edit);

// `tnk sandbox pending`: the requests the running sandbox's proxy refused that an allow rule would let
// through, as its supervisor keeps them (net/pending_requests.h).
struct PendingView {
  std::string id;
  bool running = false;     // false: nothing is pending, the list lives in the running supervisor
  std::string policy;       // the policy it runs under: only allowlist keeps refusals for approval
  nlohmann::json requests;  // net/pending_requests.h's JSON, oldest first
};
Result<PendingView> show_pending(Context& ctx, const sandbox::ResolveOptions& options);

// `tnk sandbox approve ID`: edit_policy's allow of the pending request's entry (the same rule, file and
// policy_change record); the supervisor then lists it no more. An ID the supervisor does not list is
// not_found, a sandbox that does not run a usage error.
struct Approval {
  std::string entry;  // host:port
  PolicyView view;
};
Result<Approval> approve_pending(Context& ctx, const sandbox::ResolveOptions& options, const std::string& request_id,
                                 std::optional<std::chrono::seconds> period);

// `tnk sandbox pending --watch`: asks the running supervisor every few hundred ms and calls `seen` with each
// request that is new or counted again, the ones pending at the start first; `seen` returns false when
// nothing takes the output any more. Ends on SIGINT, SIGTERM or SIGHUP, or when the sandbox stops.
enum class WatchEnd { kEnded, kStopped };
Result<WatchEnd> watch_pending(Context& ctx, const sandbox::ResolveOptions& options,
                               const std::function<bool(const nlohmann::json&)>& seen);

}  // namespace tnk::backend
