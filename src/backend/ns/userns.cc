#include "backend/ns/userns.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>

namespace tnk::ns {

Result<UniqueFd> detached_tree(const std::filesystem::path& path, uint64_t attrs, int userns_fd, Submounts submounts) {
  const unsigned recursive = submounts == Submounts::kInclude ? AT_RECURSIVE : 0;
  UniqueFd tree(open_tree(AT_FDCWD, path.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | recursive));
  if (!tree.valid()) {
    int err = errno;
    return sys_error(err, "making a bind mount of " + path.string(),
                     err == ENOSYS ? "the kernel is too old for the new mount API (needs Linux >= 5.2)" : "");
  }
  mount_attr attr{};
  attr.attr_set = static_cast<decltype(attr.attr_set)>(attrs);
  if (userns_fd >= 0) {
    attr.attr_set |= MOUNT_ATTR_IDMAP;
    attr.userns_fd = static_cast<decltype(attr.userns_fd)>(userns_fd);
  }
  if (attr.attr_set != 0 && mount_setattr(tree.get(), "", AT_EMPTY_PATH | recursive, &attr, sizeof(attr)) != 0) {
    int err = errno;
    std::string hint;
    if (userns_fd >= 0 && (err == EINVAL || err == ENOSYS || err == EPERM)) {
      hint =
          "idmapped mounts need Linux >= 5.12 and a filesystem that supports them (ext4, xfs, btrfs, tmpfs >= 6.3), "
          "the project's submounts included; run `tnk doctor`";
    }
    return sys_error(
        err, std::string(userns_fd >= 0 ? "idmapping" : "setting mount flags on") + " the bind of " + path.string(),
        hint);
  }
  return tree;
}

}  // namespace tnk::ns
