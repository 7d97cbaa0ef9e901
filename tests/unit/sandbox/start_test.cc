// The dry-run plan of `tnk sandbox start -n` (src/sandbox/start.h), as JSON and as text.
#include <gtest/gtest.h>

#include <sstream>

#include "sandbox/start.h"

namespace tnk::sandbox {
namespace {

StartPlan plain_plan() {
  StartPlan plan;
  plan.id = "tnk-demo";
  plan.backend = "ns";
  plan.profile = "dev";
  plan.state = "absent";
  return plan;
}

StartPlan lima_plan() {
  StartPlan plan = plain_plan();
  plan.backend = "lima";
  plan.yaml_file = "/home/u/.local/state/tnk/sandboxes/tnk-demo/lima.yaml";
  plan.yaml = "cpus: 2\nmemory: 4GiB\n";
  plan.commands = {{"limactl", "create", "--name=tnk-demo", "lima.yaml"}, {"limactl", "start", "tnk-demo"}};
  plan.command_lines = {"limactl create --name=tnk-demo lima.yaml", "limactl start tnk-demo"};
  plan.network_limits = {"network.allow is not enforced", "ports are not forwarded"};
  return plan;
}

std::string text_of(const StartPlan& plan) {
  std::ostringstream os;
  print_start_plan(os, plan);
  return os.str();
}

TEST(SandboxStartPlan, JsonWithoutLimaParts) {
  EXPECT_EQ(to_json(plain_plan()), nlohmann::json::parse(R"({"id": "tnk-demo", "backend": "ns", "profile": "dev",
      "state": "absent", "yaml_file": null, "yaml": null, "commands": [], "network_limits": []})"));
}

TEST(SandboxStartPlan, JsonWithLimaParts) {
  EXPECT_EQ(to_json(lima_plan()), nlohmann::json::parse(R"({"id": "tnk-demo", "backend": "lima", "profile": "dev",
      "state": "absent", "yaml_file": "/home/u/.local/state/tnk/sandboxes/tnk-demo/lima.yaml",
      "yaml": "cpus: 2\nmemory: 4GiB\n",
      "commands": [["limactl", "create", "--name=tnk-demo", "lima.yaml"], ["limactl", "start", "tnk-demo"]],
      "network_limits": ["network.allow is not enforced", "ports are not forwarded"]})"));
}

TEST(SandboxStartPlan, TextWithoutLimaParts) {
  EXPECT_EQ(text_of(plain_plan()),
            "# dry run: sandbox tnk-demo, ns backend, profile dev, now absent\n"
            "# nothing more to show: only the lima backend prints its plan\n");
}

TEST(SandboxStartPlan, TextWithLimaParts) {
  EXPECT_EQ(text_of(lima_plan()),
            "# dry run: sandbox tnk-demo, lima backend, profile dev, now absent\n"
            "# the Lima instance YAML, written to /home/u/.local/state/tnk/sandboxes/tnk-demo/lima.yaml on create:\n"
            "cpus: 2\n"
            "memory: 4GiB\n"
            "# the limactl commands, in order:\n"
            "limactl create --name=tnk-demo lima.yaml\n"
            "limactl start tnk-demo\n"
            "# what Lima cannot enforce from the host:\n"
            "#   network.allow is not enforced\n"
            "#   ports are not forwarded\n");
}

}  // namespace
}  // namespace tnk::sandbox
