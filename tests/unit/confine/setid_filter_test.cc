// The set-id mode filter, loaded in a forked child and paired with the same calls in a child without it:
// every call that can give a file S_ISUID or S_ISGID succeeds unfiltered and fails with the filter,
// while the same calls without those bits succeed in both.
#include "confine/setid_filter.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <sstream>
#include <string>

#include "child_calls.h"
#include "temp_dir.h"

namespace tnk::confine {
namespace {

using testing_support::TempDir;

// What each call came to in a child that makes it in `dir`, with or without the filter.
std::map<std::string, std::string> calls_in(const std::string& dir, bool filtered) {
  const std::vector<sock_filter> filter = setid_mode_filter();
  return testing_support::calls_in_child([&](const testing_support::ShowCall& show) {
    if (filtered && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || load_seccomp_program(filter) != 0)) _exit(2);
    umask(0);
    std::string file = dir + "/f", made = dir + "/made", node = dir + "/node", plain = dir + "/plain";
    int fd = open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    show("chmod_plain", chmod(file.c_str(), 0755));
    show("chmod_suid", chmod(file.c_str(), 04755));
    show("chmod_sgid", chmod(file.c_str(), 02755));
    show("fchmod_suid", fchmod(fd, 04755));
    show("fchmodat_sgid", fchmodat(AT_FDCWD, file.c_str(), 02755, 0));
    show("openat_suid", syscall(SYS_openat, AT_FDCWD, made.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 04755));
    show("openat_plain", syscall(SYS_openat, AT_FDCWD, plain.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0755));
    show("creat_suid", syscall(SYS_creat, (dir + "/creat").c_str(), 04755));
    show("mknodat_suid", mknodat(AT_FDCWD, node.c_str(), S_IFREG | 04644, 0));
    show("io_uring_setup", syscall(SYS_io_uring_setup, 1, nullptr));
  });
}

TEST(SetidFilterTest, RefusesSetIdModesThatSucceedWithoutIt) {
  TempDir open_dir("tnk-setid-open"), filtered_dir("tnk-setid-filtered");
  auto open = calls_in(open_dir.path().string(), false);
  auto filtered = calls_in(filtered_dir.path().string(), true);
  for (const char* call :
       {"chmod_suid", "chmod_sgid", "fchmod_suid", "fchmodat_sgid", "openat_suid", "creat_suid", "mknodat_suid"}) {
    EXPECT_EQ(open[call], "ok") << call;
    EXPECT_EQ(filtered[call], "EPERM") << call;
  }
  for (const char* call : {"chmod_plain", "openat_plain"}) {
    EXPECT_EQ(open[call], "ok") << call;
    EXPECT_EQ(filtered[call], "ok") << call;
  }
  EXPECT_EQ(filtered["io_uring_setup"], "EPERM");
  EXPECT_NE(open["io_uring_setup"], "EPERM");  // EFAULT: the kernel looked at the (null) parameters
  struct stat st {};
  ASSERT_EQ(stat((filtered_dir.path() / "f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & (S_ISUID | S_ISGID), 0U);
  EXPECT_NE(access((filtered_dir.path() / "made").c_str(), F_OK), 0);
}

}  // namespace
}  // namespace tnk::confine
