#include "backend/ns/userns.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "backend/ns/syscalls.h"
#include "core/files.h"

namespace tnk::ns {

std::string id_map_line(uint32_t inside, uint32_t outside, uint32_t count) {
  return std::to_string(inside) + " " + std::to_string(outside) + " " + std::to_string(count) + "\n";
}

namespace {

// The kernel wants the whole map in one write.
Status write_map(pid_t pid, const char* file, const std::string& map) {
  return write_kernel_file("/proc/" + std::to_string(pid) + "/" + file, map);
}

}  // namespace

Result<UniqueFd> create_userns(const std::string& uid_map, const std::string& gid_map, std::vector<pid_t>* unreaped) {
  TNK_ASSIGN_OR_RETURN(auto release, make_pipe());
  pid_t pid = sys::clone_process(CLONE_NEWUSER | SIGCHLD);
  if (pid < 0) {
    return sys_error(errno, "creating a user namespace",
                     "user namespaces are disabled or restricted on this host; run `tnk doctor`");
  }
  if (pid == 0) {
    // The helper only holds the namespace until the parent has its fd: it waits for EOF.
    close(release.write_end.get());
    char byte;
    while (read(release.read_end.get(), &byte, 1) < 0 && errno == EINTR) {
    }
    _exit(0);
  }
  release.read_end.reset();
  Status status = write_map(pid, "uid_map", uid_map);
  if (status.ok()) status = write_map(pid, "gid_map", gid_map);
  UniqueFd ns;
  if (status.ok()) {
    std::string path = "/proc/" + std::to_string(pid) + "/ns/user";
    ns.reset(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns.valid()) status = sys_error(errno, "opening " + path);
  }
  // The namespace lives on through its fd; the helper need not even get to run again.
  kill(pid, SIGKILL);
  release.write_end.reset();
  if (unreaped != nullptr) {
    unreaped->push_back(pid);
  } else {
    sys::wait_for(pid);
  }
  if (!status.ok()) return std::move(status).error();
  return ns;
}

Result<UniqueFd> detached_tree(const std::filesystem::path& path, uint64_t attrs, int userns_fd) {
  UniqueFd tree(open_tree(AT_FDCWD, path.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
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
  if (attr.attr_set != 0 && mount_setattr(tree.get(), "", AT_EMPTY_PATH, &attr, sizeof(attr)) != 0) {
    int err = errno;
    std::string hint;
    if (userns_fd >= 0 && (err == EINVAL || err == ENOSYS || err == EPERM)) {
      hint =
          "idmapped mounts need Linux >= 5.12 and a filesystem that supports them (ext4, xfs, btrfs, tmpfs >= 6.3); "
          "run `tnk doctor`";
    }
    return sys_error(
        err, std::string(userns_fd >= 0 ? "idmapping" : "setting mount flags on") + " the bind of " + path.string(),
        hint);
  }
  return tree;
}

}  // namespace tnk::ns
