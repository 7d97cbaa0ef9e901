// The supervisor's pure parts: its config round trip, and the environment a session starts with.
#include <gtest/gtest.h>

#include <algorithm>

#include "supervisor/config.h"
#include "supervisor/session_env.h"

namespace tnk::supervisor {
namespace {

bool has(const std::vector<std::string>& env, const std::string& kv) {
  return std::find(env.begin(), env.end(), kv) != env.end();
}

TEST(SupervisorConfig, RoundTripsThroughJson) {
  SupervisorConfig config;
  config.id = "tnk-demo";
  config.state_dir = "/state/tnk-demo";
  config.image_root = "/cache/images/x/rootfs";
  config.project_dir = "/home/ann/code/demo";
  config.mount_point = "/workspace";
  config.memory_bytes = 1ULL << 31;
  config.inference_host = "127.0.0.1";
  config.inference_port = 8080;
  config.network = NetworkPolicy::kAllowlist;
  config.allow = {"docs.example.org", "*.example.net:8443"};
  config.open_ports = {8080, 22};
  config.forwards = {{8080, 3000}, {5173, 5173}};
  config.audit_log = "/home/ann/audit.ndjson";
  config.readonly_paths = {".git/hooks", ".envrc"};
  auto back = config_from_json(to_json(config));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->project_dir, config.project_dir);
  EXPECT_EQ(back->memory_bytes, config.memory_bytes);
  EXPECT_FALSE(back->cpus.has_value());
  EXPECT_EQ(back->inference_port, 8080);
  EXPECT_EQ(back->network, NetworkPolicy::kAllowlist);
  EXPECT_EQ(back->allow, config.allow);
  EXPECT_EQ(back->open_ports, config.open_ports);
  EXPECT_EQ(back->forwards, config.forwards);
  EXPECT_EQ(back->readonly_paths, config.readonly_paths);
  EXPECT_EQ(back->audit_log, config.audit_log);
  EXPECT_FALSE(back->allow_unlimited);  // the default: a start without pids/memory limits is refused
}

// tnk.toml's allow_unlimited reaches the supervisor, which refuses a start without limits unless it is set.
TEST(SupervisorConfig, AllowUnlimitedRoundTrips) {
  SupervisorConfig config;
  config.id = "tnk-demo";
  config.allow_unlimited = true;
  nlohmann::json json = to_json(config);
  EXPECT_EQ(json.value("allow_unlimited", false), true);
  auto back = config_from_json(json);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_TRUE(back->allow_unlimited);
  json.erase("allow_unlimited");
  EXPECT_FALSE(config_from_json(json)->allow_unlimited);
}

TEST(SupervisorConfig, VmBootFilesRoundTripAndAreOptional) {
  SupervisorConfig config;
  config.backend = BackendKind::kVm;
  config.vm_kernel = "/cache/kernels/k/vmlinux";
  config.vm_base_disk = "/cache/disks/d/base.img";
  config.disk_bytes = 8ULL << 30;
  config.vm_kvm = true;
  auto back = config_from_json(to_json(config));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->vm_kernel, config.vm_kernel);
  EXPECT_EQ(back->vm_base_disk, config.vm_base_disk);
  EXPECT_EQ(back->disk_bytes, config.disk_bytes);
  EXPECT_TRUE(back->vm_kvm);
  auto json = to_json(SupervisorConfig{});  // a config written for an ns sandbox by an older tnk
  json.erase("vm_kernel");
  json.erase("vm_base_disk");
  json.erase("vm_kvm");
  auto ns = config_from_json(json);
  ASSERT_TRUE(ns.ok()) << ns.error().message;
  EXPECT_TRUE(ns->vm_kernel.empty());
  EXPECT_FALSE(ns->disk_bytes.has_value());
}

// The policy travels by its name, as `tnk sandbox inspect` and the audit records show it.
TEST(SupervisorConfig, NetworkPolicyByName) {
  SupervisorConfig config;
  config.network = NetworkPolicy::kNone;
  auto json = to_json(config);
  EXPECT_EQ(json["network"], "none");
  json["network"] = "open";
  auto open = config_from_json(json);
  ASSERT_TRUE(open.ok()) << open.error().message;
  EXPECT_EQ(open->network, NetworkPolicy::kOpen);
  json["network"] = "host";
  auto host = config_from_json(json);
  ASSERT_FALSE(host.ok());
  EXPECT_EQ(host.error().message, "invalid supervisor config: unknown network policy \"host\"");
}

TEST(SupervisorConfig, MissingFieldIsAnError) {
  auto json = to_json(SupervisorConfig{});
  json.erase("project_dir");
  auto back = config_from_json(json);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.error().message.find("project_dir"), std::string::npos);
}

// Security review M3: nothing provisioning runs by name comes from the agent's home, in either phase.
TEST(SessionEnv, ProvisioningPhasesHaveAPathTheAgentCannotWrite) {
  session::ExecRequest agent, agent_phase, root_phase;
  agent_phase.provisioning = root_phase.provisioning = true;
  root_phase.identity = session::Identity::kRoot;
  EXPECT_TRUE(has(session_env(agent, {}), "PATH=/home/agent/.local/bin:/usr/local/bin:/usr/bin:/bin"));
  auto env = session_env(agent_phase, {});
  EXPECT_TRUE(has(env, "HOME=/home/agent"));
  EXPECT_TRUE(has(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
  env = session_env(root_phase, {});
  EXPECT_TRUE(has(env, "HOME=/root"));
  EXPECT_TRUE(has(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
}

TEST(SessionEnv, AgentDefaultsUnderTheRequest) {
  session::ExecRequest request;
  request.env = {"TNK_MODEL_NAME=m", "PATH=/custom"};
  auto env = session_env(request, {});
  EXPECT_TRUE(has(env, "HOME=/home/agent"));
  EXPECT_TRUE(has(env, "USER=agent"));
  EXPECT_TRUE(has(env, "TNK_MODEL_NAME=m"));
  EXPECT_TRUE(has(env, "PATH=/custom"));  // the request wins over the defaults
  EXPECT_TRUE(has(env, "TERM=dumb"));
}

TEST(SessionEnv, RootAndExtras) {
  session::ExecRequest request;
  request.identity = session::Identity::kRoot;
  request.tty = true;
  request.env = {"http_proxy=mine"};
  auto env = session_env(request, {"http_proxy=http://127.0.0.1:3128", "NO_PROXY=localhost"});
  EXPECT_TRUE(has(env, "HOME=/root"));
  EXPECT_TRUE(has(env, "TERM=xterm-256color"));
  EXPECT_TRUE(has(env, "NO_PROXY=localhost"));
  EXPECT_TRUE(has(env, "http_proxy=mine"));
}

}  // namespace
}  // namespace tnk::supervisor
