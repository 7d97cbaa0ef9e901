// The probes both Linux backends share, and the system-call helpers used after fork.
#include <gtest/gtest.h>

#include <cerrno>

#include "doctor/doctor.h"
#include "linux/host_probes.h"
#include "linux/syscalls.h"

namespace tnk::linux {
namespace {

TEST(LinuxHostProbesTest, JudgesUserNamespaceKnobs) {
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

TEST(LinuxSyscallsTest, SmallHelpers) {
  EXPECT_STREQ(sys::fd_path(12, "/root").c_str(), "/proc/self/fd/12/root");
  sys::CharBuf buf;
  buf.add_int(-42).add("x");
  EXPECT_STREQ(buf.c_str(), "-42x");
  sys::CharBuf big;
  for (int i = 0; i < 200; ++i) big.add("0123456789");
  EXPECT_TRUE(big.overflowed());
}

}  // namespace
}  // namespace tnk::linux
