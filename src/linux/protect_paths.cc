#include "linux/protect_paths.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/unique_fd.h"
#include "linux/syscalls.h"

namespace tnk::linux {

namespace {

// Attaches a clone of the tree at `fd` (with its submounts), with `attrs` set, onto `fd` itself.
int bind_onto_itself(int fd, uint64_t attrs) {
  UniqueFd tree(open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE));
  if (!tree.valid()) return -1;
  if (attrs != 0) {
    mount_attr attr{};
    attr.attr_set = attrs;
    if (mount_setattr(tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) != 0) return -1;
  }
  return move_mount(tree.get(), "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
}

// Whether `fd` is the root of a mount already (a parent pinned for an earlier path).
bool is_mount_root(int fd) {
  struct statx st {};
  return statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &st) == 0 &&
         (st.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0 && (st.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
}

// Protects top/rel. Each step opens the next component afresh from its parent, so that the lookup
// crosses the mount just made on it.
int protect_one(int top, const char* rel) {
  char prefix[PATH_MAX];
  size_t len = std::strlen(rel);
  if (len == 0 || len >= sizeof prefix) {
    errno = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(prefix, rel, len + 1);
  // The parents, shortest first.
  for (size_t i = 1; i < len; ++i) {
    if (prefix[i] != '/') continue;
    prefix[i] = '\0';
    UniqueFd parent(sys::open_dirs_below(top, prefix, false, 0));
    prefix[i] = '/';
    if (!parent.valid()) return -1;
    if (!is_mount_root(parent.get()) && bind_onto_itself(parent.get(), 0) != 0) return -1;
  }
  const char* slash = std::strrchr(prefix, '/');
  UniqueFd dir;
  if (slash != nullptr) {
    prefix[slash - prefix] = '\0';
    dir.reset(sys::open_dirs_below(top, prefix, false, 0));
  } else {
    dir.reset(fcntl(top, F_DUPFD_CLOEXEC, 0));
  }
  if (!dir.valid()) return -1;
  const char* name = slash != nullptr ? slash + 1 : rel;
  UniqueFd target(openat(dir.get(), name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!target.valid() || fstat(target.get(), &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
    errno = S_ISLNK(st.st_mode) ? ELOOP : EINVAL;
    return -1;
  }
  return bind_onto_itself(target.get(), MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
}

}  // namespace

ProtectFailure protect_paths(int top, const std::vector<std::string>& rels) {
  for (size_t i = 0; i < rels.size(); ++i) {
    if (protect_one(top, rels[i].c_str()) != 0) return {static_cast<int>(i), errno == 0 ? EIO : errno};
  }
  return {};
}

}  // namespace tnk::linux
