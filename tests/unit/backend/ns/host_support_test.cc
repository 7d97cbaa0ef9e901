// Doctor probes of the ns engine, and the small pure helpers: PATH search, mount point validation,
// user namespace map lines, the fixed-size strings used after fork.
#include <gtest/gtest.h>
#include <unistd.h>

#include "backend/ns/host_support.h"
#include "backend/ns/session.h"
#include "backend/ns/start_errors.h"
#include "backend/ns/syscalls.h"
#include "backend/ns/userns.h"
#include "doctor/doctor.h"
#include "ns_test_util.h"

namespace tnk::ns {
namespace {

TEST(NsHostSupportTest, JudgesUserNamespaceKnobs) {
  auto disabled = judge_user_namespaces("0", "", 0, true);
  EXPECT_FALSE(disabled.ok);
  EXPECT_EQ(doctor::fix_command(disabled.fix), "sudo sysctl -w user.max_user_namespaces=15000");
  auto ubuntu = judge_user_namespaces("63000", "1", 0, false);
  EXPECT_FALSE(ubuntu.ok);
  EXPECT_TRUE(doctor::fix_command(ubuntu.fix).starts_with("sudo tnk setup --user ")) << ubuntu.fix;
  auto ubuntu_root = judge_user_namespaces("63000", "1", 0, true);
  EXPECT_TRUE(ubuntu_root.ok);
  auto refused = judge_user_namespaces("63000", "", EPERM, true);
  EXPECT_FALSE(refused.ok);
  EXPECT_NE(refused.detail.find("Operation not permitted"), std::string::npos);
  EXPECT_TRUE(judge_user_namespaces("63000", "", 0, true).ok);
}

TEST(NsHostSupportTest, ProbesThisHost) {
  if (geteuid() != 0) TNK_NS_SKIP("the ns probes need root");
  for (const auto& probe : probe_all()) {
    std::printf("%-32s %s: %s%s%s\n", probe.name.c_str(), probe.result.ok ? "ok" : "NOT OK",
                probe.result.detail.c_str(), probe.result.fix.empty() ? "" : " -- fix: ", probe.result.fix.c_str());
    if (probe.name == "cgroup v2 delegation") continue;  // host-dependent: not delegated on cgroup v1 hosts
    EXPECT_TRUE(probe.result.ok) << probe.name << ": " << probe.result.detail;
  }
}

TEST(NsHostSupportTest, ExecCandidatesFollowThePathOfTheGivenEnvironment) {
  EXPECT_EQ(exec_candidates("ls", {"PATH=/a:/b"}), (std::vector<std::string>{"/a/ls", "/b/ls"}));
  EXPECT_EQ(exec_candidates("ls", {"HOME=/x"}),
            (std::vector<std::string>{"/usr/local/bin/ls", "/usr/bin/ls", "/bin/ls"}));
  EXPECT_EQ(exec_candidates("./run", {"PATH=/a"}), std::vector<std::string>{"./run"});
  EXPECT_EQ(exec_candidates("x", {"PATH=:/a"}), (std::vector<std::string>{"x", "/a/x"}));
}

TEST(NsHostSupportTest, ValidatesMountPoints) {
  EXPECT_TRUE(validate_mount_point("/workspace").ok());
  EXPECT_TRUE(validate_mount_point("/home/agent/project").ok());
  for (const char* bad : {"", "/", "workspace", "/a/../b", "/a/", "/a//b", "/proc", "/proc/x", "/dev/shm", "/sys"}) {
    EXPECT_FALSE(validate_mount_point(bad).ok()) << bad;
  }
  EXPECT_TRUE(validate_cgroup_name("abc-1.2_x").ok());
  EXPECT_FALSE(validate_cgroup_name("a/b").ok());
  EXPECT_FALSE(validate_cgroup_name("..").ok());
}

TEST(NsHostSupportTest, SmallHelpers) {
  EXPECT_STREQ(sys::fd_path(12, "/root").c_str(), "/proc/self/fd/12/root");
  sys::CharBuf buf;
  buf.add_int(-42).add("x");
  EXPECT_STREQ(buf.c_str(), "-42x");
  sys::CharBuf big;
  for (int i = 0; i < 200; ++i) big.add("0123456789");
  EXPECT_TRUE(big.overflowed());
}

TEST(NsHostSupportTest, StartErrorsNameTheObjectAndHint) {
  SandboxSpec spec;
  spec.upper_dir = "/state/upper";
  Error e = start_step_error(Step::kMountOverlay, EACCES, 0, spec);
  EXPECT_EQ(e.message, "mounting the overlay root of /state/upper: Permission denied");
  EXPECT_NE(e.hint.find("tnk doctor"), std::string::npos);
  std::vector<sys::Report> reports = {{static_cast<int32_t>(Step::kInitPid), 0, 77},
                                      {static_cast<int32_t>(Step::kNoteSysfs), EPERM, 0},
                                      {static_cast<int32_t>(Step::kPivotRoot), EINVAL, 0}};
  StartOutcome outcome = interpret_start_reports(reports, spec);
  EXPECT_EQ(outcome.init_pid, 77);
  EXPECT_FALSE(outcome.ready);
  EXPECT_EQ(outcome.error.message, "switching to the sandbox's root (pivot_root): Invalid argument");
  ASSERT_EQ(outcome.notes.size(), 1U);
  EXPECT_EQ(outcome.notes[0], "/sys is not mounted in the sandbox: Operation not permitted");
}

}  // namespace
}  // namespace tnk::ns
