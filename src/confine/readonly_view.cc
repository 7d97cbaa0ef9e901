#include "confine/readonly_view.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>

namespace tnk::confine {

int make_readonly_view(const char* path) {
  if (unshare(CLONE_NEWNS) != 0) return -1;
  // <sys/mount.h> cannot be included beside <linux/mount.h>: raw calls.
  if (syscall(SYS_mount, nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) return -1;
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_RDONLY;
  return static_cast<int>(syscall(SYS_mount_setattr, AT_FDCWD, path, AT_RECURSIVE, &attr, sizeof attr));
}

}  // namespace tnk::confine
