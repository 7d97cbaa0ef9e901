// tnk sandbox forward: port forwards from the host's 127.0.0.1 into a running sandbox, for its lifetime;
// tnk sandbox allow, deny, policy and approve: the host user's changes of its network policy
// (backend/live_policy.h); `pending`, the refusals approve lifts, is cmd_pending.cc's.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>

#include "backend/forward.h"
#include "backend/live_policy.h"
#include "cli/sandbox_verbs.h"
#include "net/live_policy.h"
#include "net/policy.h"

namespace tnk::cli {
namespace {

struct ForwardFlags {
  SandboxFlags sandbox;
  std::vector<std::string> specs;  // HOSTPORT:GUESTPORT or PORT
  std::vector<unsigned> remove;
};

void print_forwards(std::ostream& os, const std::string& id, const nlohmann::json& forwards) {
  if (forwards.empty()) {
    os << "no port forwards into " << id << "\n";
    return;
  }
  for (const auto& f : forwards) {
    os << "127.0.0.1:" << f.value("host_port", 0) << " -> " << id << ":" << f.value("guest_port", 0) << "\n";
  }
}

Result<int> run_forward(Context& ctx, const ForwardFlags& flags) {
  backend::ForwardChanges changes;
  for (unsigned port : flags.remove) {
    if (port < 1 || port > 65535) return usage_error("--remove needs a host port from 1 to 65535");
    changes.remove.push_back(static_cast<uint16_t>(port));
  }
  for (const auto& spec : flags.specs) {
    TNK_ASSIGN_OR_RETURN(PortForward forward, parse_port_forward(spec));
    changes.add.push_back(forward);
  }
  TNK_ASSIGN_OR_RETURN(backend::Forwards forwards, backend::forward(ctx, flags.sandbox.resolve_options(), changes));
  ctx.out.list(forwards.current, [&](std::ostream& os) { print_forwards(os, forwards.id, forwards.current); });
  return kExitOk;
}

struct PolicyFlags {
  SandboxFlags sandbox;
  std::string host;      // HOST[:PORT]
  std::string duration;  // --for
  std::string remove;    // policy --remove HOST[:PORT]
};

// "allowlist (sha256 1f2e3d4c...)": the policy and the start of its hash, which the audit records carry whole.
std::string policy_heading(const nlohmann::json& policy) {
  return policy.value("policy", "?") + " (policy hash " + policy.value("hash", "").substr(0, 12) + ")";
}

// Whether the rules apply under the policy a view shows: those with an egress proxy.
bool takes_rules(const nlohmann::json& policy) {
  auto parsed = parse_network_policy(policy.value("policy", ""));
  return parsed && has_egress_proxy(*parsed);
}

// One line per entry: what asked for it, and how the proxy enforces it.
void print_policy(std::ostream& os, const backend::PolicyView& view) {
  const nlohmann::json& p = view.policy;
  os << view.id << ": " << policy_heading(p) << (view.running ? "" : ", for the next start: it is not running") << "\n";
  for (const auto& entry : p.value("entries", nlohmann::json::array())) {
    os << "  " << entry.value("action", "?") << " " << entry.value("entry", "?") << "  (" << entry.value("source", "?");
    if (entry.value("until", nlohmann::json()).is_string()) os << ", until " << entry["until"].get<std::string>();
    os << "; " << entry.value("enforced", "?") << ")\n";
  }
  std::size_t rules = p.value("rules", nlohmann::json::array()).size();
  if (!takes_rules(p) && rules > 0) {
    os << "  " << rules << " rule(s) of tnk sandbox allow/deny kept, not applied: the " << p.value("policy", "?")
       << " policy has no egress proxy\n";
  }
}

Result<std::optional<std::chrono::seconds>> rule_period(const PolicyFlags& flags) {
  if (flags.duration.empty()) return std::optional<std::chrono::seconds>();
  TNK_ASSIGN_OR_RETURN(std::chrono::seconds period, net::parse_rule_duration(flags.duration));
  return std::optional<std::chrono::seconds>(period);
}

// The policy after a change; `what` is the change ("allow example.org for 10m").
void print_edit(Context& ctx, const backend::PolicyView& view, const std::string& what) {
  ctx.out.document(view.policy, [&](std::ostream& os) {
    if (!view.running) {
      os << view.id << " is not running: recorded '" << what << "' for its next start (" << policy_heading(view.policy)
         << ")\n";
      if (!takes_rules(view.policy)) {
        os << "it applies when the sandbox runs under the allowlist or open policy; its profile asks for "
           << view.policy.value("policy", "?") << "\n";
      }
      return;
    }
    os << view.id << ": " << what << " is in force, " << policy_heading(view.policy);
    uint64_t cut = view.policy.value("cut", uint64_t{0});
    if (cut > 0) os << "; " << cut << " open connection(s) cut";
    os << "\n";
  });
}

std::string edit_text(net::RuleAction action, const std::string& entry, const PolicyFlags& flags) {
  return net::to_string(action) + " " + entry + (flags.duration.empty() ? "" : " for " + flags.duration);
}

Result<int> run_policy_edit(Context& ctx, const PolicyFlags& flags, net::RuleAction action) {
  backend::PolicyEdit edit{action, {}, std::nullopt};
  TNK_ASSIGN_OR_RETURN(edit.entry, net::parse_rule_entry(flags.host));
  TNK_ASSIGN_OR_RETURN(edit.period, rule_period(flags));
  TNK_ASSIGN_OR_RETURN(backend::PolicyView view, backend::edit_policy(ctx, flags.sandbox.resolve_options(), edit));
  print_edit(ctx, view, edit_text(action, edit.entry, flags));
  return kExitOk;
}

// `policy --remove HOST[:PORT]`: the rule for that entry, allow or deny, is gone; the profile decides again.
Result<int> run_policy_remove(Context& ctx, const PolicyFlags& flags) {
  backend::PolicyEdit edit{std::nullopt, {}, std::nullopt};
  TNK_ASSIGN_OR_RETURN(edit.entry, net::parse_rule_entry(flags.remove));
  TNK_ASSIGN_OR_RETURN(backend::PolicyView view, backend::edit_policy(ctx, flags.sandbox.resolve_options(), edit));
  print_edit(ctx, view, "remove " + edit.entry);
  return kExitOk;
}

// `approve ID` is `allow` of the pending request's host:port; flags.host holds the ID.
Result<int> run_approve(Context& ctx, const PolicyFlags& flags) {
  TNK_ASSIGN_OR_RETURN(auto period, rule_period(flags));
  TNK_ASSIGN_OR_RETURN(backend::Approval approval,
                       backend::approve_pending(ctx, flags.sandbox.resolve_options(), flags.host, period));
  print_edit(ctx, approval.view, edit_text(net::RuleAction::kAllow, approval.entry, flags));
  return kExitOk;
}

Result<int> run_policy_show(Context& ctx, const PolicyFlags& flags) {
  if (!flags.remove.empty()) return run_policy_remove(ctx, flags);
  TNK_ASSIGN_OR_RETURN(backend::PolicyView view, backend::show_policy(ctx, flags.sandbox.resolve_options()));
  ctx.out.document(view.policy, [&](std::ostream& os) { print_policy(os, view); });
  return kExitOk;
}

// `allow` or `deny` HOST[:PORT] (allow also takes --for).
void add_edit_command(CLI::App& sandbox, CommandTable& table, net::RuleAction action, const std::string& summary,
                      const std::string& explanation, const std::string& example, const std::string& host_help) {
  auto* command = sandbox.add_subcommand(net::to_string(action), summary);
  describe(*command, explanation, example);
  auto flags = std::make_shared<PolicyFlags>();
  add_sandbox_flags(*command, flags->sandbox, false);
  command->add_option("HOST", flags->host, host_help)->required();
  if (action == net::RuleAction::kAllow) {
    command->add_option("--for", flags->duration, "End the rule by itself after this long: 30s, 10m, 2h, 1d")
        ->type_name("DURATION");
  }
  table.add(command, [flags, action](Context& ctx) { return run_policy_edit(ctx, *flags, action); });
}

void add_approve_command(CLI::App& sandbox, CommandTable& table) {
  auto* approve = sandbox.add_subcommand("approve", "Let a pending request through: allow its host and port");
  describe(*approve,
           "Approve the request ID that `tnk sandbox pending` lists: exactly `tnk sandbox allow HOST:PORT` of its "
           "host and port (the same rule, kept for later starts, the same policy_change audit record, --for as "
           "there), after which it is no longer pending. An ID the running sandbox does not list is an error "
           "(exit 66); so is a sandbox that does not run (exit 64). Only the host user can approve: nothing inside "
           "the sandbox reaches its supervisor.",
           "tnk sandbox approve 3f9a1c2e --for 1h");
  auto flags = std::make_shared<PolicyFlags>();
  add_sandbox_flags(*approve, flags->sandbox, false);
  approve->add_option("ID", flags->host, "The request's ID, as `tnk sandbox pending` lists it")->required();
  approve->add_option("--for", flags->duration, "End the rule by itself after this long: 30s, 10m, 2h, 1d")
      ->type_name("DURATION");
  table.add(approve, [flags](Context& ctx) { return run_approve(ctx, *flags); });
}

void add_policy_commands(CLI::App& sandbox, CommandTable& table) {
  add_edit_command(sandbox, table, net::RuleAction::kAllow, "Let the sandbox reach a host through its proxy, at once",
                   "Add HOST[:PORT] to the allow-list of the sandbox's proxy (the allowlist policy; under open, a port "
                   "beyond open's). A running sandbox decides every later connection by the new policy; a stopped one "
                   "gets the rule at its next start. Without --for the rule lasts until `tnk sandbox deny`, `tnk "
                   "sandbox policy --remove` or the sandbox's deletion. Each change is a "
                   "policy_change audit record. Nothing inside the sandbox can make this change.",
                   "tnk sandbox allow registry.example.org:8443 --for 30m",
                   "A name, *.name or IP literal, with an optional :PORT (else 80 and 443)");
  add_edit_command(sandbox, table, net::RuleAction::kDeny,
                   "Stop the sandbox reaching a host, and cut its open connections",
                   "Refuse HOST[:PORT] (without :PORT, every port of it) in the sandbox's proxy, under allowlist even "
                   "when the profile's network.allow lists it, and under open, which lets every other name through. "
                   "It replaces any `tnk sandbox allow` of it. A running sandbox's connections to it are cut at once. "
                   "The rule lasts until `tnk sandbox allow` of the same HOST[:PORT] or `tnk sandbox policy --remove`.",
                   "tnk sandbox deny registry.example.org", "A name, *.name or IP literal, with an optional :PORT");
  auto* policy = sandbox.add_subcommand("policy", "Show the network policy in force and its rules");
  describe(*policy,
           "Show the sandbox's network policy: the profile's network.allow, the rules of `tnk sandbox allow` and "
           "`deny` with who added them and until when, and the policy's hash (as the policy_change records carry "
           "it). A stopped sandbox shows what its next start applies. --remove drops the rule for one entry, "
           "allow or deny, so the profile decides it again (a policy_change record; exit 66 without such a rule).",
           "tnk sandbox policy --remove registry.example.org:8443");
  auto policy_flags = std::make_shared<PolicyFlags>();
  add_sandbox_flags(*policy, policy_flags->sandbox, false);
  policy
      ->add_option("--remove", policy_flags->remove,
                   "Remove the allow or deny rule for this entry (as tnk sandbox policy lists it)")
      ->type_name("HOST[:PORT]");
  table.add(policy, [policy_flags](Context& ctx) { return run_policy_show(ctx, *policy_flags); });
  add_pending_command(sandbox, table);
  add_approve_command(sandbox, table);
}

}  // namespace

void add_network_commands(CLI::App& sandbox, CommandTable& table) {
  add_policy_commands(sandbox, table);
  auto* forward = sandbox.add_subcommand("forward", "Forward a port of the host's 127.0.0.1 into the sandbox");
  describe(*forward,
           "Forward HOSTPORT on the host's 127.0.0.1 (never another address) to GUESTPORT on the sandbox's own "
           "loopback, until the sandbox stops. Without arguments, list the forwards. Each connection is a "
           "net_allow record in the audit log. Forwards that should exist from every start go under `ports:` "
           "in the profile's manifest.",
           "tnk sandbox forward 8080:3000");
  auto flags = std::make_shared<ForwardFlags>();
  add_sandbox_flags(*forward, flags->sandbox, false);
  forward->add_option("FORWARD", flags->specs, "HOSTPORT:GUESTPORT, or PORT for the same port on both sides");
  forward->add_option("--remove", flags->remove, "Remove the forward on this host port (repeatable)")
      ->type_name("HOSTPORT");
  table.add(forward, [flags](Context& ctx) { return run_forward(ctx, *flags); });
}

}  // namespace tnk::cli
