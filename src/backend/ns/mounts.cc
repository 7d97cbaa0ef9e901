#include "backend/ns/mounts.h"

#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/unique_fd.h"
#include "linux/protect_paths.h"
#include "linux/syscalls.h"

namespace tnk::ns {

namespace {

int mount_at(const char* source, int target_fd, const char* type, unsigned long flags, const char* data) {
  return mount(source, linux::sys::fd_path(target_fd).c_str(), type, flags, data);
}

// Attaches the detached tree `tree` at target/rel (rel "" = target itself).
int attach(int tree, int target, const char* rel) {
  unsigned flags = MOVE_MOUNT_F_EMPTY_PATH | (rel[0] == '\0' ? MOVE_MOUNT_T_EMPTY_PATH : 0U);
  return move_mount(tree, "", target, rel, flags);
}

// A private tmpfs on the staging dir holds the mount points of the lower layer and of the new root, so
// nothing is created on the host. It disappears with the old root after pivot_root.
StepError make_staging(int staging_dir, UniqueFd* staging) {
  UniqueFd context(fsopen("tmpfs", FSOPEN_CLOEXEC));
  if (!context.valid()) return failed_at(Step::kStagingTmpfs);
  if (fsconfig(context.get(), FSCONFIG_SET_STRING, "mode", "0700", 0) != 0 ||
      fsconfig(context.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
    return failed_at(Step::kStagingTmpfs);
  }
  staging->reset(fsmount(context.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
  if (!staging->valid()) return failed_at(Step::kStagingTmpfs);
  if (mkdirat(staging->get(), "lower", 0700) != 0 || mkdirat(staging->get(), "root", 0700) != 0) {
    return failed_at(Step::kStagingTmpfs);
  }
  if (attach(staging->get(), staging_dir, "") != 0) return failed_at(Step::kAttachStaging);
  return {};
}

// Layers are named by /proc/self/fd paths: no host path is parsed or shown in the sandbox's mountinfo.
// overlayfs takes private clones of the layers, so they must be mounts of this namespace (hence the
// attached lower) and the mounter must be mapped root of the user namespace (userxattr, no trusted.*).
StepError mount_overlay(const OpenedDirs& dirs, int staging, UniqueFd* root) {
  if (attach(dirs.lower, staging, "lower") != 0) return failed_at(Step::kAttachLower);
  linux::sys::CharBuf options;
  options.add("lowerdir=").add(linux::sys::fd_path(dirs.lower).c_str());
  options.add(",upperdir=").add(linux::sys::fd_path(dirs.upper).c_str());
  options.add(",workdir=").add(linux::sys::fd_path(dirs.work).c_str()).add(",userxattr");
  if (mount("overlay", linux::sys::fd_path(staging, "/root").c_str(), "overlay", 0, options.c_str()) != 0) {
    return failed_at(Step::kMountOverlay);
  }
  root->reset(openat(staging, "root", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root->valid()) return failed_at(Step::kOpenRoot);
  return {};
}

constexpr const char* kDevNodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
constexpr const char* kDevLinks[][2] = {{"ptmx", "pts/ptmx"},
                                        {"fd", "/proc/self/fd"},
                                        {"stdin", "/proc/self/fd/0"},
                                        {"stdout", "/proc/self/fd/1"},
                                        {"stderr", "/proc/self/fd/2"}};
// gid 5 = kTtyGid: pty slaves belong to the `tty` group, mode 620.
constexpr const char* kDevptsOptions = "newinstance,ptmxmode=0666,mode=0620,gid=5";
// A tmpfs without size= may take half the host's memory, each (security review M5); its pages count
// against the sandbox's memory limit where one applies, these bound it where none does. /dev/shm as
// large as headless browsers need (Docker's 64 MiB default is a known crash for them), /tmp for builds.
constexpr const char* kShmOptions = "mode=1777,size=256m,nr_inodes=65536";
constexpr const char* kTmpOptions = "mode=1777,size=2g,nr_inodes=262144";
constexpr const char* kRunOptions = "mode=755,size=16m,nr_inodes=4096";

// A tmpfs /dev: the harmless host nodes bound onto empty files (mknod is refused in a user namespace),
// a private devpts instance, /dev/shm and the usual symlinks.
StepError build_dev(int root) {
  UniqueFd under(linux::sys::open_dirs_below(root, "dev", true, 0755));
  if (!under.valid() || mount_at("tmpfs", under.get(), "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=65536") != 0) {
    return failed_at(Step::kMountDev);
  }
  UniqueFd dev(linux::sys::open_dirs_below(root, "dev", false, 0));
  if (!dev.valid()) return failed_at(Step::kMountDev);
  for (const char* name : kDevNodes) {
    UniqueFd file(openat(dev.get(), name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0666));
    linux::sys::CharBuf source;
    source.add("/dev/").add(name);
    if (!file.valid() || mount_at(source.c_str(), file.get(), nullptr, MS_BIND, nullptr) != 0) {
      return failed_at(Step::kDevNode);
    }
  }
  if (mkdirat(dev.get(), "pts", 0755) != 0) return failed_at(Step::kMountDevpts);
  UniqueFd pts(openat(dev.get(), "pts", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!pts.valid() || mount_at("devpts", pts.get(), "devpts", MS_NOSUID | MS_NOEXEC, kDevptsOptions) != 0) {
    return failed_at(Step::kMountDevpts);
  }
  if (mkdirat(dev.get(), "shm", 01777) != 0) return failed_at(Step::kMountShm);
  UniqueFd shm(openat(dev.get(), "shm", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!shm.valid() || mount_at("tmpfs", shm.get(), "tmpfs", MS_NOSUID | MS_NODEV, kShmOptions) != 0) {
    return failed_at(Step::kMountShm);
  }
  for (const auto& link : kDevLinks) {
    if (symlinkat(link[1], dev.get(), link[0]) != 0) return failed_at(Step::kMountDev);
  }
  return {};
}

// proc must be mounted by a process of the new pid namespace while the host's procfs is still visible
// (before pivot_root). sysfs is read-only and optional: without it the sandbox still works.
StepError mount_kernel_filesystems(const InitPlan& plan, int root) {
  UniqueFd proc(linux::sys::open_dirs_below(root, "proc", true, 0555));
  if (!proc.valid() || mount_at("proc", proc.get(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    return failed_at(Step::kMountProc);
  }
  UniqueFd sysfs(linux::sys::open_dirs_below(root, "sys", true, 0555));
  if (!sysfs.valid() ||
      mount_at("sysfs", sysfs.get(), "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    linux::sys::send_report(plan.report_fd, static_cast<int32_t>(Step::kNoteSysfs), errno);
  }
  return {};
}

StepError mount_tmpfs_dirs(int root) {
  UniqueFd tmp(linux::sys::open_dirs_below(root, "tmp", true, 01777));
  if (!tmp.valid() || mount_at("tmpfs", tmp.get(), "tmpfs", MS_NOSUID | MS_NODEV, kTmpOptions) != 0) {
    return failed_at(Step::kMountTmp);
  }
  UniqueFd under(linux::sys::open_dirs_below(root, "run", true, 0755));
  if (!under.valid() || mount_at("tmpfs", under.get(), "tmpfs", MS_NOSUID | MS_NODEV, kRunOptions) != 0) {
    return failed_at(Step::kMountRun);
  }
  UniqueFd run(linux::sys::open_dirs_below(root, "run", false, 0));
  if (!run.valid() || mkdirat(run.get(), "lock", 01777) != 0) return failed_at(Step::kMountRun);
  return {};
}

// Makes etc/<name> a regular file (a symlink or other non-file there is replaced; a missing one is
// created in the upper layer) and attaches the read-only bind `tree` on it.
StepError bind_etc_file(int root, const char* name, int tree, Step step) {
  UniqueFd etc(linux::sys::open_dirs_below(root, "etc", true, 0755));
  if (!etc.valid()) return failed_at(step);
  struct stat st {};
  bool exists = fstatat(etc.get(), name, &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (exists && !S_ISREG(st.st_mode)) {
    if (unlinkat(etc.get(), name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0) return failed_at(step);
    exists = false;
  }
  if (!exists) {
    UniqueFd created(openat(etc.get(), name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!created.valid()) return failed_at(step);
  }
  UniqueFd target(openat(etc.get(), name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!target.valid() || attach(tree, target.get(), "") != 0) return failed_at(step);
  return {};
}

// Read-only binds of `rels` below the mount at root/`at`, which was just attached there.
StepError protect_below(int root, const char* at, const std::vector<std::string>& rels, Step step) {
  if (rels.empty()) return {};
  UniqueFd top(linux::sys::open_dirs_below(root, at, false, 0));
  if (!top.valid()) return failed_at(step);
  linux::ProtectFailure failure = linux::protect_paths(top.get(), rels);
  if (failure.index < 0) return {};
  return {step, failure.err, failure.index};
}

// Review mode: the project (attached in the staging tmpfs, as overlayfs wants its layers mounted in this
// namespace) as the lower layer of an overlay whose upper is tnk's review layer. userxattr implies
// redirect_dir=nofollow, so a rename of a directory is EXDEV (tools copy instead), and without metacopy
// every changed file is whole in the upper: the layer then reads as plain files and whiteouts
// (review/diff.h).
StepError mount_review_overlay(const OpenedDirs& dirs, int staging, int target) {
  if (mkdirat(staging, "project", 0700) != 0 || attach(dirs.project, staging, "project") != 0) {
    return failed_at(Step::kMountReviewOverlay);
  }
  UniqueFd lower(openat(staging, "project", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!lower.valid()) return failed_at(Step::kMountReviewOverlay);
  linux::sys::CharBuf options;
  options.add("lowerdir=").add(linux::sys::fd_path(lower.get()).c_str());
  options.add(",upperdir=").add(linux::sys::fd_path(dirs.review_upper).c_str());
  options.add(",workdir=").add(linux::sys::fd_path(dirs.review_work).c_str());
  options.add(",userxattr,metacopy=off");
  if (mount_at("overlay", target, "overlay", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
    return failed_at(Step::kMountReviewOverlay);
  }
  return {};
}

StepError mount_project(const InitPlan& plan, const OpenedDirs& dirs, int staging, int root) {
  UniqueFd target(linux::sys::open_dirs_below(root, plan.mount_point.c_str(), true, 0755));
  if (!target.valid()) return failed_at(Step::kMountProject);
  if (dirs.review_upper >= 0) {
    if (StepError e = mount_review_overlay(dirs, staging, target.get()); !e.ok()) return e;
  } else if (attach(dirs.project, target.get(), "") != 0) {
    return failed_at(Step::kMountProject);
  }
  return protect_below(root, plan.mount_point.c_str(), plan.protected_paths, Step::kProtectPath);
}

// A linked worktree's common git dir at its own path (made in the sandbox's tree if missing there),
// with its protected paths read-only. After /tmp and /run: a repository there is seen on their tmpfs.
StepError mount_git_dir(const InitPlan& plan, const OpenedDirs& dirs, int root) {
  if (plan.git_common_dir.empty()) return {};
  const char* at = plan.git_common_dir.c_str() + 1;  // relative to the new root
  UniqueFd target(linux::sys::open_dirs_below(root, at, true, 0755));
  if (!target.valid() || attach(dirs.git_dir, target.get(), "") != 0) return failed_at(Step::kMountGitDir);
  return protect_below(root, at, plan.git_protected_paths, Step::kProtectGitPath);
}

StepError pivot_into(int root) {
  // pivot_root(".", "."): the old root ends up on top of the new one and is detached right away.
  if (fchdir(root) != 0 || linux::sys::pivot_root(".", ".") != 0 || umount2(".", MNT_DETACH) != 0 || chdir("/") != 0) {
    return failed_at(Step::kPivotRoot);
  }
  return {};
}

StepError loopback_up() {
  UniqueFd sock(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ifreq request{};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  if (!sock.valid() || ioctl(sock.get(), SIOCGIFFLAGS, &request) != 0) return failed_at(Step::kLoopback);
  request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP | IFF_RUNNING);
  if (ioctl(sock.get(), SIOCSIFFLAGS, &request) != 0) return failed_at(Step::kLoopback);
  return {};
}

}  // namespace

StepError build_root(const InitPlan& plan, const OpenedDirs& dirs) {
  UniqueFd staging;
  StepError e = make_staging(dirs.staging, &staging);
  UniqueFd root;
  if (e.ok()) e = mount_overlay(dirs, staging.get(), &root);
  if (e.ok()) e = build_dev(root.get());
  if (e.ok()) e = mount_kernel_filesystems(plan, root.get());
  if (e.ok()) e = mount_tmpfs_dirs(root.get());
  if (e.ok()) e = bind_etc_file(root.get(), "hosts", dirs.hosts, Step::kBindHosts);
  if (e.ok()) e = bind_etc_file(root.get(), "resolv.conf", dirs.resolv, Step::kBindResolv);
  if (e.ok()) e = mount_project(plan, dirs, staging.get(), root.get());
  if (e.ok()) e = mount_git_dir(plan, dirs, root.get());
  if (e.ok() && sethostname(plan.hostname.data(), plan.hostname.size()) != 0) e = failed_at(Step::kSetHostname);
  if (e.ok()) e = pivot_into(root.get());
  if (e.ok()) e = loopback_up();
  return e;
}

}  // namespace tnk::ns
