// Parsing `limactl list --format json` (one object per line, as Lima prints it) and the doctor check.
#include <gtest/gtest.h>

#include "backend/lima/doctor_check.h"
#include "backend/lima/instances.h"
#include "backend/lima/limactl.h"

namespace tnk::lima {
namespace {

// Two lines as Lima 1.0 prints them (abridged: the real objects carry more fields, ignored here).
constexpr const char* kTwoInstances =
    R"({"name":"default","status":"Stopped","dir":"/Users/ann/.lima/default","vmType":"vz","arch":"aarch64",)"
    R"("cpuType":"","cpus":4,"memory":4294967296,"disk":107374182400,"sshLocalPort":0,"hostAgentPID":0,)"
    R"("config":{"vmType":"vz"},"errors":null})"
    "\n"
    R"({"name":"tnk-demo","status":"Running","dir":"/Users/ann/.lima/tnk-demo","vmType":"vz","arch":"aarch64",)"
    R"("cpus":2,"memory":2147483648,"disk":8589934592,"sshLocalPort":60022,"hostAgentPID":4242})"
    "\n";

TEST(LimaInstances, ParsesOneObjectPerLine) {
  auto instances = parse_instances(kTwoInstances);
  ASSERT_TRUE(instances.ok()) << instances.error().message;
  ASSERT_EQ(instances->size(), 2u);
  const Instance* demo = find_instance(*instances, "tnk-demo");
  ASSERT_NE(demo, nullptr);
  EXPECT_EQ(demo->status, "Running");
  EXPECT_EQ(demo->cpus, 2u);
  EXPECT_EQ(demo->memory_bytes, 2147483648u);
  EXPECT_EQ(demo->dir, "/Users/ann/.lima/tnk-demo");
  EXPECT_EQ(sandbox_state(demo), state::SandboxState::kRunning);
  EXPECT_EQ(sandbox_state(find_instance(*instances, "default")), state::SandboxState::kStopped);
}

TEST(LimaInstances, EmptyOutputIsNoInstance) {
  auto instances = parse_instances("");
  ASSERT_TRUE(instances.ok());
  EXPECT_TRUE(instances->empty());
  EXPECT_EQ(sandbox_state(find_instance(*instances, "tnk-demo")), state::SandboxState::kStopped);
}

TEST(LimaInstances, AcceptsAnArrayToo) {
  auto instances = parse_instances(R"([{"name":"a","status":"Broken"},{"name":"b","status":"Running"}])");
  ASSERT_TRUE(instances.ok());
  ASSERT_EQ(instances->size(), 2u);
  EXPECT_EQ(sandbox_state(&(*instances)[0]), state::SandboxState::kBroken);
}

TEST(LimaInstances, GarbageIsAnErrorNamingTheLine) {
  auto instances = parse_instances("{\"name\":\"a\"}\nNAME STATUS\n");
  ASSERT_FALSE(instances.ok());
  EXPECT_NE(instances.error().message.find("line 2"), std::string::npos) << instances.error().message;
  EXPECT_FALSE(parse_instances("{\"status\":\"Running\"}").ok());
}

TEST(LimaInstances, TailLines) {
  EXPECT_EQ(tail_lines("a\n\nb\nc\n", 2), "b | c");
  EXPECT_EQ(tail_lines("", 2), "(no output)");
}

TEST(LimaDoctor, NotApplicableOnLinuxWithoutLima) {
  host::HostFacts facts;
  auto outcome = lima_outcome(facts, std::nullopt);
  EXPECT_EQ(outcome.status, doctor::Status::kInfo);
  EXPECT_NE(outcome.summary.find("not applicable"), std::string::npos);
}

TEST(LimaDoctor, MissingOnMacosIsAWarningWithAFix) {
  host::HostFacts facts;
  facts.is_macos = true;
  auto outcome = lima_outcome(facts, std::nullopt);
  EXPECT_EQ(outcome.status, doctor::Status::kWarn);
  EXPECT_EQ(outcome.fix, "brew install lima");
}

TEST(LimaDoctor, VersionIsReportedAndCheckedAgainstTheMinimum) {
  host::HostFacts facts;
  facts.limactl_found = true;
  facts.limactl_path = "/opt/homebrew/bin/limactl";
  auto ok = lima_outcome(facts, std::string("limactl version 1.0.3\n"));
  EXPECT_EQ(ok.status, doctor::Status::kOk);
  EXPECT_EQ(ok.summary, "Lima 1.0.3 (/opt/homebrew/bin/limactl)");
  EXPECT_EQ(lima_outcome(facts, std::string("limactl version 0.23.2\n")).status, doctor::Status::kWarn);
  EXPECT_EQ(lima_outcome(facts, std::nullopt).status, doctor::Status::kWarn);
  EXPECT_EQ(parse_version("limactl version v2.0.0-beta.1"), "2.0.0-beta.1");
  EXPECT_EQ(parse_version("nonsense"), std::nullopt);
}

}  // namespace
}  // namespace tnk::lima
