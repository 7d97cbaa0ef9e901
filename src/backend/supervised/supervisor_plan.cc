#include "backend/supervised/supervisor_plan.h"

#include <algorithm>
#include <string>
#include <vector>

#include "inference/url.h"
#include "net/live_policy.h"

namespace tnk::supervised {

namespace {

// The profile's git_routes, each of which must name one of tnk.toml's routes.
Status check_git_routes(const sandbox::Resolved& r, const Config& config,
                        const std::vector<net::CredentialRoute>& routes) {
  for (const auto& [name, prefix] : r.manifest.git_routes) {
    bool defined = std::any_of(routes.begin(), routes.end(),
                               [&name = name](const net::CredentialRoute& route) { return route.name == name; });
    if (!defined) {
      return usage_error(r.manifest.source.string() + ": git_routes names the route '" + name + "', which " +
                             config.file.string() + " does not define",
                         "add a [[routes]] section named '" + name + "' to tnk.toml, or remove it from git_routes");
    }
  }
  return ok_status();
}

// Which of `tnk sandbox allow`/`deny`'s rules this start applies, or that its policy has no egress proxy
// for them (they stay stored for a start under allowlist or open).
void live_rules_note(const sandbox::Resolved& r, const std::vector<net::LiveRule>& rules, SupervisorPlan& plan) {
  if (rules.empty()) return;
  std::string list;
  for (const net::LiveRule& rule : rules) list += (list.empty() ? "" : ", ") + net::describe(rule);
  if (has_egress_proxy(r.network)) {
    plan.notes.push_back("extra network rules (tnk sandbox allow/deny) apply: " + list);
  } else {
    plan.notes.push_back("extra network rules (tnk sandbox allow/deny) do not apply under the " + to_string(r.network) +
                         " policy, only under allowlist and open: " + list);
  }
}

// Issue 34 item 3: an entry of network.allow the started policy cannot enforce as written refuses the
// start (exit 64) rather than being dropped (`inference`, `none`) or widened to every name (`open`).
Status check_allow_enforceable(const sandbox::Resolved& r) {
  if (r.network == NetworkPolicy::kAllowlist || r.manifest.allow_domains.empty()) return ok_status();
  std::string policy = to_string(r.network);
  std::string how = r.network == NetworkPolicy::kOpen ? "it lets every name through, so the entry would be widened"
                                                      : "it has no allow-list, so the entry would be dropped";
  std::string why = r.network_source == "--network" ? "--network " + policy : "the " + policy + " policy";
  return usage_error(r.manifest.source.string() + ": network.allow entry '" + r.manifest.allow_domains.front() +
                         "' cannot be enforced under " + why + ": " + how,
                     "start it with --network allowlist, or remove network.allow from the manifest");
}

// tnk.toml's [[ssh_routes]] under `allowlist` and `open`, where the supervisor adds each host:port to what
// the proxy passes (supervisor/network_policy.cc: SSH to it and to no other host). They sign with the
// host's agent, so a start without one (SSH_AUTH_SOCK) is refused.
Status plan_ssh_routes(const sandbox::Resolved& r, const Config& config, SupervisorInputs& in, SupervisorPlan& plan) {
  if (config.ssh_routes.empty()) return ok_status();
  if (r.network != NetworkPolicy::kAllowlist && r.network != NetworkPolicy::kOpen) {
    plan.notes.push_back("tnk.toml's [[ssh_routes]] apply under the allowlist and open policies only");
    return ok_status();
  }
  if (in.ssh_agent.empty()) {
    return usage_error("tnk.toml has [[ssh_routes]], but no SSH agent runs for them: SSH_AUTH_SOCK is not set",
                       "start one (eval $(ssh-agent); ssh-add KEY) in the shell that runs tnk sandbox start");
  }
  supervisor::SupervisorConfig& c = plan.config;
  c.ssh_routes = config.ssh_routes;
  c.ssh_agent = in.ssh_agent;
  return ok_status();
}

// The endpoint, the gateway, the allow-list and the routes: under `none`, none of them.
Status plan_network(const sandbox::Resolved& r, const Config& config, SupervisorInputs& in, SupervisorPlan& plan) {
  supervisor::SupervisorConfig& c = plan.config;
  c.network = r.network;
  TNK_RETURN_IF_ERROR(check_allow_enforceable(r));
  live_rules_note(r, in.live_rules, plan);
  TNK_ASSIGN_OR_RETURN(auto url, inference::parse_url(r.host_inference_url));
  if (r.network == NetworkPolicy::kNone) return ok_status();  // not even the endpoint
  c.inference_host = url.host;
  c.inference_port = url.port;
  c.gateway = std::move(in.gateway);
  if (has_egress_proxy(r.network)) c.live_rules = std::move(in.live_rules);
  if (r.network == NetworkPolicy::kAllowlist) {
    c.allow = std::move(in.allow);
    if (c.allow.empty() && c.live_rules.empty())
      plan.notes.push_back("network policy allowlist with an empty network.allow: only the endpoint");
  }
  TNK_RETURN_IF_ERROR(plan_ssh_routes(r, config, in, plan));
  TNK_RETURN_IF_ERROR(check_git_routes(r, config, in.routes));
  c.routes = std::move(in.routes);
  c.git_routes = r.manifest.git_routes;
  return ok_status();
}

}  // namespace

Result<SupervisorPlan> plan_supervisor(const sandbox::Resolved& r, const state::SandboxRecord& record,
                                       const Config& config, SupervisorInputs in) {
  SupervisorPlan plan;
  supervisor::SupervisorConfig& c = plan.config;
  c.id = r.id;
  c.backend = record.backend;
  c.state_dir = in.state_dir;
  c.image_root = in.image_root;
  c.project_dir = record.project_dir;
  c.mount_point = record.mount_point;
  c.readonly_paths = r.manifest.readonly_paths;
  c.review = in.review;
  c.memory_bytes = r.manifest.memory_bytes;
  if (r.manifest.cpus) c.cpus = static_cast<double>(*r.manifest.cpus);
  c.allow_unlimited = config.allow_unlimited.value;
  TNK_RETURN_IF_ERROR(plan_network(r, config, in, plan));
  c.open_ports = r.manifest.open_ports;
  c.forwards = r.manifest.ports;
  c.audit_log = in.audit_log;
  c.disk_bytes = r.manifest.disk_bytes.value_or(config.sandbox_disk_bytes.value);
  if (in.vm) {
    c.vm_kernel = in.vm->kernel;
    c.vm_base_disk = in.vm->base_disk;
    c.vm_kvm = in.vm->kvm;
  }
  return plan;
}

}  // namespace tnk::supervised
