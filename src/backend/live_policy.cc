#include "backend/live_policy.h"

#include <poll.h>
#include <signal.h>

#include <map>
#include <string>
#include <vector>

#include "audit/events.h"
#include "audit/sha256.h"
#include "backend/registry.h"
#include "core/signal_scope.h"
#include "core/user_name.h"
#include "sandbox/audit_target.h"
#include "sandbox/live_rules.h"
#include "session/control_client.h"
#include "state/layout.h"
#include "state/store.h"

namespace tnk::backend {
namespace {

constexpr std::chrono::seconds kPolicyOpTimeout{5};
// How often --watch asks the supervisor: a person waiting for a notification does not notice 300 ms, and
// an answer of at most 256 entries costs the supervisor next to nothing.
constexpr int kPendingPollMs = 300;

// A sandbox tnk can change the policy of: it exists, and its backend runs a supervisor.
Result<sandbox::Resolved> policy_target(Context& ctx, sandbox::ResolveOptions options) {
  options.keep_started_endpoint = true;  // the endpoint's model has nothing to do with the policy
  TNK_ASSIGN_OR_RETURN(sandbox::Resolved r, backend::resolve(ctx, options));
  if (!r.record) {
    return not_found("sandbox " + r.id + " does not exist", "start it once with tnk sandbox start, then add rules");
  }
  TNK_ASSIGN_OR_RETURN(auto opened, open_backend(ctx, r.backend));
  if (!opened->capabilities().running_network) {
    return usage_error(std::string("the ") + to_string(r.backend) + " backend has no network policy tnk changes",
                       "list the host under network.allow in the profile's manifest");
  }
  return r;
}

// What a sandbox that does not run would start with (its profile's entries as written, registries unexpanded).
nlohmann::json stored_policy(const sandbox::Resolved& r, const std::vector<net::LiveRule>& rules) {
  bool applies = has_egress_proxy(r.network);
  std::vector<std::string> base =
      r.network == NetworkPolicy::kAllowlist ? r.manifest.allow_domains : std::vector<std::string>{};
  std::vector<net::LiveRule> applied = applies ? rules : std::vector<net::LiveRule>{};
  net::PolicyInForce policy = net::policy_in_force(to_string(r.network), base, applied, net::unix_ms_now());
  return {{"policy", policy.policy},
          {"hash", audit::sha256_hex(net::canonical_text(policy))},
          {"allow", policy.allow},
          {"deny", policy.deny},
          {"profile_allow", base},
          {"rules", net::to_json(rules)},
          {"entries", net::policy_entries(base, applied)},
          {"running", false}};
}

std::filesystem::path control_socket(Context& ctx, const std::string& id) {
  return state::Store(ctx.paths.sandboxes_dir()).file(id, state::kControlSocket);
}

}  // namespace

Result<PolicyView> show_policy(Context& ctx, const sandbox::ResolveOptions& options) {
  TNK_ASSIGN_OR_RETURN(sandbox::Resolved r, policy_target(ctx, options));
  if (r.state == state::SandboxState::kRunning) {
    TNK_ASSIGN_OR_RETURN(nlohmann::json policy,
                         session::request_policy(control_socket(ctx, r.id), session::policy_op(), kPolicyOpTimeout));
    return PolicyView{r.id, true, policy};
  }
  state::Store store(ctx.paths.sandboxes_dir());
  TNK_ASSIGN_OR_RETURN(auto rules, sandbox::load_live_rules(store.dir(r.id)));
  return PolicyView{r.id, false, stored_policy(r, rules)};
}

Result<PolicyView> edit_policy(Context& ctx, const sandbox::ResolveOptions& options, const PolicyEdit& edit) {
  TNK_ASSIGN_OR_RETURN(sandbox::Resolved r, policy_target(ctx, options));
  state::Store store(ctx.paths.sandboxes_dir());
  TNK_ASSIGN_OR_RETURN(auto lock, store.lock_existing(r.id, ctx.log));
  if (!lock) return not_found("sandbox " + r.id + " does not exist");
  std::filesystem::path dir = store.dir(r.id);
  TNK_ASSIGN_OR_RETURN(std::vector<net::LiveRule> rules, sandbox::load_live_rules(dir));
  int64_t now = net::unix_ms_now();
  net::LiveRule rule{edit.action.value_or(net::RuleAction::kAllow), edit.entry, now, std::nullopt,
                     effective_user_name()};
  if (edit.period) rule.expires_ms = now + std::chrono::duration_cast<std::chrono::milliseconds>(*edit.period).count();
  std::vector<net::LiveRule> changed = edit.action ? net::with_rule(rules, rule, now) : net::unexpired(rules, now);
  if (!edit.action &&
      std::erase_if(changed, [&](const net::LiveRule& kept) { return kept.entry == edit.entry; }) == 0) {
    return not_found("sandbox " + r.id + " has no rule for " + edit.entry,
                     "`tnk sandbox policy` lists its rules; the profile's network.allow changes in its manifest");
  }
  const std::string action = edit.action ? net::to_string(*edit.action) : "remove";
  PolicyView view{r.id, r.state == state::SandboxState::kRunning, {}};
  if (view.running) {
    nlohmann::json change = {{"action", action}, {"rule", rule.entry}, {"who", rule.who}};
    if (rule.expires_ms) change["until_ms"] = *rule.expires_ms;
    TNK_ASSIGN_OR_RETURN(view.policy, session::request_policy(control_socket(ctx, r.id),
                                                              session::policy_change_op(net::to_json(changed), change),
                                                              kPolicyOpTimeout));
    TNK_RETURN_IF_ERROR(sandbox::save_live_rules(dir, changed));
    return view;
  }
  TNK_RETURN_IF_ERROR(sandbox::save_live_rules(dir, changed));
  std::string old_hash = stored_policy(r, rules).value("hash", "");
  view.policy = stored_policy(r, changed);
  std::optional<std::string> until;
  if (rule.expires_ms) until = net::utc_text(*rule.expires_ms);
  TNK_RETURN_IF_ERROR(sandbox::audit_record(ctx, "", r.id, {},
                                            audit::policy_change(r.id, {action, rule.entry, rule.who, until, old_hash,
                                                                        view.policy.value("hash", ""), false, 0})));
  return view;
}

Result<PendingView> show_pending(Context& ctx, const sandbox::ResolveOptions& options) {
  TNK_ASSIGN_OR_RETURN(sandbox::Resolved r, policy_target(ctx, options));
  if (r.state != state::SandboxState::kRunning) {
    return PendingView{r.id, false, to_string(r.network), nlohmann::json::array()};
  }
  TNK_ASSIGN_OR_RETURN(nlohmann::json pending, session::request_pending(control_socket(ctx, r.id), kPolicyOpTimeout));
  return PendingView{r.id, true, pending.value("policy", ""), pending.value("requests", nlohmann::json::array())};
}

Result<Approval> approve_pending(Context& ctx, const sandbox::ResolveOptions& options, const std::string& request_id,
                                 std::optional<std::chrono::seconds> period) {
  TNK_ASSIGN_OR_RETURN(PendingView pending, show_pending(ctx, options));
  if (!pending.running) {
    return usage_error("sandbox " + pending.id + " is not running: no request of it is pending",
                       "requests wait for approval while it runs; to let a host through from its next start: tnk "
                       "sandbox allow HOST[:PORT]");
  }
  for (const nlohmann::json& request : pending.requests) {
    if (request.value("id", "") != request_id) continue;
    PolicyEdit edit{net::RuleAction::kAllow, {}, period};
    TNK_ASSIGN_OR_RETURN(edit.entry, net::parse_rule_entry(request.value("entry", "")));
    TNK_ASSIGN_OR_RETURN(PolicyView view, edit_policy(ctx, options, edit));
    return Approval{edit.entry, std::move(view)};
  }
  return not_found("no pending request '" + request_id + "' in sandbox " + pending.id,
                   "run `tnk sandbox pending` to list them: a request leaves the list once a rule allows or denies "
                   "it, and when the sandbox stops");
}

Result<WatchEnd> watch_pending(Context& ctx, const sandbox::ResolveOptions& options,
                               const std::function<bool(const nlohmann::json&)>& seen) {
  TNK_ASSIGN_OR_RETURN(sandbox::Resolved r, policy_target(ctx, options));
  if (r.state != state::SandboxState::kRunning) {
    return usage_error("sandbox " + r.id + " is not running", "start it first: tnk sandbox start");
  }
  TNK_ASSIGN_OR_RETURN(auto signals, SignalScope::install({SIGINT, SIGTERM, SIGHUP}));
  std::filesystem::path ctl = control_socket(ctx, r.id);
  std::map<std::string, uint64_t> counts;  // by id, as last seen: an entry that leaves and comes back has a new id
  for (;;) {
    auto pending = session::request_pending(ctl, kPolicyOpTimeout);
    if (!pending) {
      // Once the sandbox stopped its supervisor is gone, and the watch ends with it.
      auto now = policy_target(ctx, options);
      if (!now || now->state != state::SandboxState::kRunning) return WatchEnd::kStopped;
      return pending.error();
    }
    std::map<std::string, uint64_t> current;
    for (const nlohmann::json& request : pending->value("requests", nlohmann::json::array())) {
      std::string id = request.value("id", "");
      uint64_t count = request.value("count", uint64_t{0});
      current[id] = count;
      auto before = counts.find(id);
      if ((before == counts.end() || before->second != count) && !seen(request)) return WatchEnd::kEnded;
    }
    counts = std::move(current);
    pollfd interrupted{signals->fd(), POLLIN, 0};
    if (::poll(&interrupted, 1, kPendingPollMs) > 0) return WatchEnd::kEnded;
  }
}

}  // namespace tnk::backend
