// The read-only view, in a child that is root of a user namespace of its own (as a session is root of
// the sandbox's): the same write succeeds before the view and outside it, and fails inside it.
#include "confine/readonly_view.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "core/files.h"
#include "temp_dir.h"

namespace tnk::confine {
namespace {

using testing_support::TempDir;

int write_in(const std::string& dir, const char* name) {
  int fd = open((dir + "/" + name).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  close(fd);
  return 0;
}

TEST(ReadonlyViewTest, TheMountIsReadOnlyInTheViewAndWritableOutside) {
  TempDir dir("tnk-readonly-view");
  const std::string path = dir.path().string();
  const std::string uid_map = "0 " + std::to_string(geteuid()) + " 1\n";
  const std::string gid_map = "0 " + std::to_string(getegid()) + " 1\n";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    int result[2] = {-1, -1};  // errno of a write before the view, inside it
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0 && write_kernel_file("/proc/self/setgroups", "deny").ok() &&
        write_kernel_file("/proc/self/uid_map", uid_map).ok() &&
        write_kernel_file("/proc/self/gid_map", gid_map).ok() &&
        mount(path.c_str(), path.c_str(), nullptr, MS_BIND, nullptr) == 0) {
      result[0] = write_in(path, "before");
      result[1] = make_readonly_view(path.c_str()) == 0 ? write_in(path, "inside") : -errno;
    }
    (void)!write(fds[1], result, sizeof result);
    _exit(0);
  }
  close(fds[1]);
  int result[2] = {-1, -1};
  ASSERT_EQ(read(fds[0], result, sizeof result), static_cast<ssize_t>(sizeof result));
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  EXPECT_EQ(result[0], 0);
  EXPECT_EQ(result[1], EROFS);
  EXPECT_EQ(write_in(path, "outside"), 0);
}

}  // namespace
}  // namespace tnk::confine
