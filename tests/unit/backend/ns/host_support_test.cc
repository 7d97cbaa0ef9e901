// Doctor probes of the ns engine, and the small pure helpers: PATH search, mount point validation,
// the start errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include "backend/ns/host_support.h"
#include "backend/ns/session.h"
#include "backend/ns/start_errors.h"
#include "linux/syscalls.h"
#include "ns_test_util.h"

namespace tnk::ns {
namespace {

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

TEST(NsHostSupportTest, StartErrorsNameTheObjectAndHint) {
  SandboxSpec spec;
  spec.upper_dir = "/state/upper";
  Error e = start_step_error(Step::kMountOverlay, EACCES, 0, spec);
  EXPECT_EQ(e.message, "mounting the overlay root of /state/upper: Permission denied");
  EXPECT_NE(e.hint.find("tnk doctor"), std::string::npos);
  std::vector<linux::sys::Report> reports = {{static_cast<int32_t>(Step::kInitPid), 0, 77},
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
