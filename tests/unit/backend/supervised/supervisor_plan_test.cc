// The supervisor's configuration against golden files (tests/unit/backend/supervised/golden/<case>.json):
// what a start hands its supervisor, from the resolved sandbox, its record, tnk.toml and what the caller
// read, without a file, a process or a clock. After an intended change:
// TNK_UPDATE_GOLDEN=1 ./tnk_unit_tests --gtest_filter='SupervisorPlan*', then review the golden files' diff.
#include "backend/supervised/supervisor_plan.h"

#include <gtest/gtest.h>

#include "golden.h"

namespace tnk::supervised {
namespace {

// A project of alice's on the default profile's shape: 512 MiB, 2 cpus, a read-only path, a forward.
sandbox::Resolved resolved(NetworkPolicy network) {
  sandbox::Resolved r;
  r.id = "tnk-demo-1a2b3c4d";
  r.project.dir = "/home/alice/code/demo";
  r.profile = "base";
  r.network = network;
  r.host_inference_url = "http://127.0.0.1:8080/v1";
  r.manifest.source = "/home/alice/.config/tnk/sandbox.d/manifests/base.yaml";
  r.manifest.memory_bytes = uint64_t{512} << 20;
  r.manifest.cpus = 2;
  r.manifest.readonly_paths = {".git/hooks", ".git/config"};
  r.manifest.open_ports = {8443};
  r.manifest.ports = {PortForward{3000, 3000}};
  // Only where the policy enforces it: elsewhere the start is refused (AnAllowEntryThePolicyCannotEnforce...).
  if (network == NetworkPolicy::kAllowlist) r.manifest.allow_domains = {"@npm", "example.org"};
  r.manifest.git_routes = {{"github", "https://github.com/"}};
  return r;
}

state::SandboxRecord record_of(const sandbox::Resolved& r, BackendKind backend) {
  state::SandboxRecord record;
  record.id = r.id;
  record.backend = backend;
  record.project_dir = r.project.dir;
  record.mount_point = "/workspace";
  return record;
}

SupervisorInputs inputs() {
  SupervisorInputs in;
  in.state_dir = "/home/alice/.local/state/tnk/sandboxes/tnk-demo-1a2b3c4d";
  in.image_root = "/home/alice/.cache/tnk/images/debian-bookworm-0123456789ab/rootfs";
  in.gateway.api_key = "sk-golden-key";
  in.gateway.aliases = {{"default", "qwen"}};
  net::CredentialRoute route;
  route.name = "github";
  route.host = "github.com";
  route.header_name = "Authorization";
  route.header_value = "Basic eC1hY2Nlc3MtdG9rZW46Z2hwX2dvbGRlbg==";
  route.secrets = {"ghp_golden"};
  in.routes = {route};
  in.allow = {"registry.example", "example.org"};  // what the caller expanded "@npm" to
  return in;
}

Config config() {
  Config c;
  c.file = "/home/alice/.config/tnk/tnk.toml";
  return c;
}

void expect_golden(const std::string& name, const SupervisorPlan& plan) {
  nlohmann::json shown = supervisor::to_json(plan.config);
  shown["notes"] = plan.notes;
  testing_support::expect_golden("backend/supervised/golden/" + name + ".json", shown.dump(1) + "\n");
}

TEST(SupervisorPlan, InferencePolicyGetsTheEndpointTheGatewayAndTheRoutes) {
  sandbox::Resolved r = resolved(NetworkPolicy::kInference);
  auto plan = plan_supervisor(r, record_of(r, BackendKind::kNs), config(), inputs());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(plan->config.allow.empty());  // the allow-list is `allowlist`'s only
  expect_golden("ns_inference", *plan);
}

TEST(SupervisorPlan, AllowlistGetsTheExpandedListAndAnEmptyOneIsNoted) {
  sandbox::Resolved r = resolved(NetworkPolicy::kAllowlist);
  auto plan = plan_supervisor(r, record_of(r, BackendKind::kNs), config(), inputs());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  expect_golden("ns_allowlist", *plan);
  SupervisorInputs empty = inputs();
  empty.allow.clear();
  auto noted = plan_supervisor(r, record_of(r, BackendKind::kNs), config(), empty);
  ASSERT_TRUE(noted.ok());
  EXPECT_EQ(noted->notes,
            std::vector<std::string>{"network policy allowlist with an empty network.allow: only the endpoint"});
}

// Issue 34: the stored rules of `tnk sandbox allow`/`deny` reach the supervisor under allowlist, and the
// start names them; under another policy they are named as not applied, and the supervisor gets none.
TEST(SupervisorPlan, LiveRulesApplyUnderThePoliciesWithAProxyAndTheStartNamesThem) {
  SupervisorInputs in = inputs();
  in.live_rules = {{net::RuleAction::kAllow, "extra.example.org:8443", 1, std::nullopt, "alice"},
                   {net::RuleAction::kDeny, "github.com", 1, std::nullopt, "alice"}};
  for (NetworkPolicy policy : {NetworkPolicy::kAllowlist, NetworkPolicy::kOpen}) {
    sandbox::Resolved r = resolved(policy);
    auto plan = plan_supervisor(r, record_of(r, BackendKind::kNs), config(), in);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_EQ(plan->config.live_rules, in.live_rules) << to_string(policy);
    EXPECT_EQ(plan->notes, std::vector<std::string>{"extra network rules (tnk sandbox allow/deny) apply: allow "
                                                    "extra.example.org:8443, deny github.com"});
  }
  sandbox::Resolved inference = resolved(NetworkPolicy::kInference);
  auto kept = plan_supervisor(inference, record_of(inference, BackendKind::kNs), config(), in);
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE(kept->config.live_rules.empty());
  ASSERT_EQ(kept->notes.size(), 1u);
  EXPECT_EQ(
      kept->notes[0].rfind("extra network rules (tnk sandbox allow/deny) do not apply under the inference policy", 0),
      0u);
}

// Issue 34 item 3: network.allow under a policy that would drop or widen it refuses the start, naming it.
TEST(SupervisorPlan, AnAllowEntryThePolicyCannotEnforceRefusesTheStart) {
  for (NetworkPolicy policy : {NetworkPolicy::kInference, NetworkPolicy::kOpen, NetworkPolicy::kNone}) {
    sandbox::Resolved r = resolved(policy);
    r.manifest.allow_domains = {"docs.example.org", "*.example.net"};
    r.network_source = "--network";
    auto plan = plan_supervisor(r, record_of(r, BackendKind::kNs), config(), inputs());
    ASSERT_FALSE(plan.ok()) << to_string(policy);
    EXPECT_EQ(plan.error().kind, ErrorKind::kUsage);
    EXPECT_NE(plan.error().message.find(": network.allow entry 'docs.example.org' cannot be enforced under --network " +
                                        to_string(policy)),
              std::string::npos)
        << plan.error().message;
    EXPECT_NE(plan.error().hint.find("--network allowlist"), std::string::npos);
  }
  sandbox::Resolved allowlist = resolved(NetworkPolicy::kAllowlist);
  allowlist.manifest.allow_domains = {"docs.example.org:22"};  // any port: the proxy enforces it as written
  EXPECT_TRUE(plan_supervisor(allowlist, record_of(allowlist, BackendKind::kNs), config(), inputs()).ok());
}

TEST(SupervisorPlan, NoneHandsOnNoEndpointNoKeyAndNoRoute) {
  sandbox::Resolved r = resolved(NetworkPolicy::kNone);
  auto plan = plan_supervisor(r, record_of(r, BackendKind::kNs), config(), inputs());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(plan->config.gateway.api_key.empty());
  EXPECT_TRUE(plan->config.routes.empty());
  expect_golden("ns_none", *plan);
}

TEST(SupervisorPlan, VmGetsItsBootFilesAndAcceleratorAndTheDefaultDisk) {
  sandbox::Resolved r = resolved(NetworkPolicy::kOpen);
  SupervisorInputs in = inputs();
  in.vm = VmBoot{"/home/alice/.cache/tnk/kernels/linux-6.1/vmlinux", "/home/alice/.cache/tnk/vm/base.ext4", true};
  in.review = true;
  in.audit_log = "/home/alice/audit/demo.ndjson";
  auto plan = plan_supervisor(r, record_of(r, BackendKind::kVm), config(), in);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  expect_golden("vm_open_review", *plan);
}

TEST(SupervisorPlan, AGitRouteTnkTomlDoesNotDefineIsAUsageError) {
  sandbox::Resolved r = resolved(NetworkPolicy::kInference);
  r.manifest.git_routes = {{"gitlab", "https://gitlab.com/"}};
  auto plan = plan_supervisor(r, record_of(r, BackendKind::kNs), config(), inputs());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(plan.error().message,
            "/home/alice/.config/tnk/sandbox.d/manifests/base.yaml: git_routes names the route 'gitlab', which "
            "/home/alice/.config/tnk/tnk.toml does not define");
}

// Issue 34 item 4: [[ssh_routes]] reach the supervisor with the host's agent under allowlist (each adding
// its host:port to the allow-list) and open; a start without an agent is refused; under inference they
// are named as not applied.
TEST(SupervisorPlan, SshRoutesGetTheHostsAgentUnderAllowlistAndOpen) {
  Config with_route = config();
  with_route.ssh_routes = {{"git.example", 2222, "host key blob", {"identity blob"}}};
  SupervisorInputs in = inputs();
  in.ssh_agent = "/tmp/ssh-agent.sock";
  sandbox::Resolved allowlist = resolved(NetworkPolicy::kAllowlist);
  auto plan = plan_supervisor(allowlist, record_of(allowlist, BackendKind::kNs), with_route, in);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  // The profile's allow-list stays the profile's: the supervisor adds the routes' hosts, with their source.
  EXPECT_EQ(plan->config.allow, (std::vector<std::string>{"registry.example", "example.org"}));
  EXPECT_EQ(plan->config.ssh_agent, "/tmp/ssh-agent.sock");
  ASSERT_EQ(plan->config.ssh_routes.size(), 1u);
  auto round_trip = supervisor::config_from_json(supervisor::to_json(plan->config));
  ASSERT_TRUE(round_trip.ok()) << round_trip.error().message;
  EXPECT_EQ(round_trip->ssh_routes.at(0).host_key, "host key blob");
  EXPECT_EQ(round_trip->ssh_routes.at(0).identities, std::vector<std::string>{"identity blob"});

  sandbox::Resolved open = resolved(NetworkPolicy::kOpen);
  auto opened = plan_supervisor(open, record_of(open, BackendKind::kNs), with_route, in);
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ(opened->config.ssh_routes.size(), 1u);
  EXPECT_TRUE(opened->config.allow.empty());

  sandbox::Resolved inference = resolved(NetworkPolicy::kInference);
  auto not_applied = plan_supervisor(inference, record_of(inference, BackendKind::kNs), with_route, in);
  ASSERT_TRUE(not_applied.ok());
  EXPECT_TRUE(not_applied->config.ssh_routes.empty());
  EXPECT_EQ(not_applied->notes,
            std::vector<std::string>{"tnk.toml's [[ssh_routes]] apply under the allowlist and open policies only"});

  in.ssh_agent.clear();
  auto no_agent = plan_supervisor(allowlist, record_of(allowlist, BackendKind::kNs), with_route, in);
  ASSERT_FALSE(no_agent.ok());
  EXPECT_EQ(no_agent.error().kind, ErrorKind::kUsage);
  EXPECT_NE(no_agent.error().message.find("no SSH agent runs for them"), std::string::npos);
}

}  // namespace
}  // namespace tnk::supervised
