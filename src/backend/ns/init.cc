#include "backend/ns/init.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>

#include "backend/ns/mounts.h"
#include "backend/ns/signals.h"
#include "linux/cgroups.h"
#include "linux/syscalls.h"

namespace tnk::ns {

namespace {

constexpr long kShutdownWaitMs = 3000;  // after forwarding SIGTERM, how long PID 1 waits for the others
constexpr long kShutdownPollMs = 10;

[[noreturn]] void die(int report_fd, Step step, int err, int32_t value = 0) {
  linux::sys::send_report(report_fd, static_cast<int32_t>(step), err == 0 ? EIO : err, value);
  _exit(1);
}

long now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// True when /proc/<name>/stat shows a process that is not a zombie.
bool is_live_process(int proc_fd, const char* name) {
  linux::sys::CharBuf path;
  path.add(name).add("/stat");
  int fd = openat(proc_fd, path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* paren = std::strrchr(buf, ')');
  if (paren == nullptr || paren[1] == '\0' || paren[2] == '\0') return false;
  return paren[2] != 'Z' && paren[2] != 'X';
}

// Whether any process other than PID 1 is still running in the sandbox (zombies do not count: the
// sessions' zombies belong to the caller, which reaps them).
bool others_alive() {
  int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0) return false;
  bool alive = false;
  char buf[4096];
  ssize_t n;
  while (!alive && (n = getdents64(proc, buf, sizeof(buf))) > 0) {
    for (ssize_t off = 0; off < n && !alive;) {
      const auto* entry = reinterpret_cast<const dirent64*>(buf + off);
      off += entry->d_reclen;
      const char* name = entry->d_name;
      bool numeric = name[0] >= '1' && name[0] <= '9';
      for (const char* c = name; numeric && *c != '\0'; ++c) numeric = *c >= '0' && *c <= '9';
      if (numeric && std::strcmp(name, "1") != 0) alive = is_live_process(proc, name);
    }
  }
  close(proc);
  return alive;
}

// PID 1's loop: reap every orphan; on SIGTERM forward it to everyone, wait for them (at most 3 s),
// then exit, which makes the kernel kill whatever is left.
[[noreturn]] void serve_as_init() {
  sigset_t set = init_signal_set();
  bool stopping = false;
  long deadline = 0;
  for (;;) {
    timespec wait{};
    if (stopping) {
      wait.tv_nsec = kShutdownPollMs * 1000000;
    } else {
      wait.tv_sec = 3600;
    }
    siginfo_t info{};
    int sig = sigtimedwait(&set, &info, &wait);
    while (waitpid(-1, nullptr, WNOHANG | __WALL) > 0) {
    }
    if (sig == SIGTERM && !stopping) {
      stopping = true;
      deadline = now_ms() + kShutdownWaitMs;
      kill(-1, SIGTERM);
    }
    if (stopping && (!others_alive() || now_ms() >= deadline)) _exit(0);
  }
}

[[noreturn]] void run_init(const InitPlan& plan, const OpenedDirs& dirs) {
  int report = plan.report_fd;
  // Mapped root from here on: overlayfs records the mounter's credentials and refuses unmapped ones.
  if (setgroups(0, nullptr) != 0 || setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0) {
    die(report, Step::kSetIds, errno);
  }
  // Dies with the caller. getppid() is 0 here (the parent is outside the pid namespace), so the usual
  // "did the parent die before prctl" check is impossible; instead, the ready record below is written
  // after prctl, and if the caller is gone nobody reads it: the write fails with EPIPE and we exit.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) die(report, Step::kInitSignals, errno);
  prctl(PR_SET_NAME, "tnk-init");  // the comm the sandbox sees; argv stays the supervisor's short one
  prctl(PR_SET_DUMPABLE, 0);       // its memory is a copy of the supervisor's: not readable from inside
  if (!become_init_signals()) die(report, Step::kInitSignals, errno);
  umask(0);
  StepError e = build_root(plan, dirs);
  if (!e.ok()) die(report, e.step, e.err, e.value);
  umask(022);
  // Keep only the report pipe: PID 1 never execs, so CLOEXEC does not close the caller's fds.
  int kept = fcntl(report, F_DUPFD_CLOEXEC, 3);
  if (kept < 0) die(report, Step::kInitStdio, errno);
  close_range(3, static_cast<unsigned>(kept - 1), 0);
  close_range(static_cast<unsigned>(kept + 1), ~0U, 0);
  int null_fd = open("/dev/null", O_RDWR);
  if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(null_fd, 1) < 0 || dup2(null_fd, 2) < 0) {
    die(kept, Step::kInitStdio, errno);
  }
  if (null_fd > 2) close(null_fd);
  if (!linux::sys::send_report(kept, static_cast<int32_t>(Step::kReady), 0)) _exit(1);
  close(kept);
  serve_as_init();
}

// A detached bind of `path` with `attrs`, made in the sandbox's mount namespace; -1 with errno.
// `recursive`: 0, or AT_RECURSIVE to take the mounts below `path` along (Submounts::kInclude).
int detached_bind(const std::string& path, uint64_t attrs, unsigned recursive = 0) {
  int tree = open_tree(AT_FDCWD, path.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | recursive);
  if (tree < 0) return -1;
  mount_attr attr{};
  attr.attr_set = attrs;
  if (mount_setattr(tree, "", AT_EMPTY_PATH | recursive, &attr, sizeof(attr)) != 0) {
    int err = errno;
    close(tree);
    errno = err;
    return -1;
  }
  return tree;
}

// The binds PID 1 mounts, as the user: no idmapping (only root may idmap a host mount); the image tree
// is owned by the user's range and the project by the user, whom the map shows as `agent`.
void make_rootless_binds(const InitPlan& plan, OpenedDirs& dirs) {
  constexpr uint64_t kReadOnly = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
  dirs.lower = detached_bind(plan.image_root, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV);
  if (dirs.lower < 0) die(plan.report_fd, Step::kAttachLower, errno);
  dirs.project = detached_bind(plan.project_dir, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, AT_RECURSIVE);
  if (dirs.project < 0) die(plan.report_fd, Step::kMountProject, errno);
  dirs.hosts = detached_bind(plan.hosts_file, kReadOnly);
  if (dirs.hosts < 0) die(plan.report_fd, Step::kBindHosts, errno);
  dirs.resolv = detached_bind(plan.resolv_file, kReadOnly);
  if (dirs.resolv < 0) die(plan.report_fd, Step::kBindResolv, errno);
  if (!plan.git_common_dir.empty()) {
    dirs.git_dir = detached_bind(plan.git_common_dir, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, AT_RECURSIVE);
    if (dirs.git_dir < 0) die(plan.report_fd, Step::kMountGitDir, errno);
  }
}

}  // namespace

[[noreturn]] void run_setup_child(const InitPlan& plan) {
  int report = plan.report_fd;
  if (int err = linux::join_cgroups(plan.cgroup_procs_fds); err != 0) die(report, Step::kJoinCgroup, err);
  if (setns(plan.ns_fds[kUserNs], CLONE_NEWUSER) != 0) die(report, Step::kSetnsUser, errno);
  for (size_t i = kMntNs; i < kNsCount; ++i) {
    if (i == kPidNs) continue;
    if (setns(plan.ns_fds[i], ns_clone_flag(static_cast<NsIndex>(i))) != 0) die(report, Step::kUnshare, errno);
  }
  if (unshare(CLONE_NEWPID) != 0) die(report, Step::kUnshare, errno);
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) die(report, Step::kPrivateMounts, errno);
  // setns() kept our host uid (root, or the user), so the owner bits of the state directories still let
  // us look these paths up (as mapped root we could not). The fds name mounts of the sandbox's mount
  // namespace, as overlayfs requires.
  OpenedDirs dirs{-1, -1, -1, plan.lower_fd, plan.project_fd, plan.hosts_fd, plan.resolv_fd, plan.git_dir_fd};
  dirs.staging = open(plan.staging_dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dirs.staging < 0) die(report, Step::kOpenStaging, errno);
  dirs.upper = open(plan.upper_dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dirs.upper < 0) die(report, Step::kOpenUpper, errno);
  dirs.work = open(plan.work_dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dirs.work < 0) die(report, Step::kOpenWork, errno);
  if (!plan.review_upper.empty()) {
    dirs.review_upper = open(plan.review_upper.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    dirs.review_work = open(plan.review_work.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dirs.review_upper < 0 || dirs.review_work < 0) die(report, Step::kOpenReviewLayer, errno);
  }
  if (plan.rootless) make_rootless_binds(plan, dirs);
  // The upper directory's owner is the owner of the sandbox's `/`: the sandbox's root, never `agent`.
  // (The user may: it owns the namespace, and both ids are mapped.)
  if (plan.rootless &&
      (fchownat(dirs.upper, "", 0, 0, AT_EMPTY_PATH) != 0 || fchownat(dirs.work, "", 0, 0, AT_EMPTY_PATH) != 0)) {
    die(report, Step::kOpenUpper, errno);
  }
  // CLONE_PARENT: PID 1 is the caller's child (the caller reaps it; no reparenting through a subreaper).
  // Our own ids stay: a process that changes them is no longer dumpable, and the caller must still open
  // our pid_for_children once PID 1 exists.
  pid_t pid = linux::sys::clone_process(CLONE_PARENT | SIGCHLD);
  if (pid < 0) die(report, Step::kCloneInit, errno);
  if (pid == 0) run_init(plan, dirs);
  linux::sys::send_report(report, static_cast<int32_t>(Step::kInitPid), 0, pid);
  close(report);
  char byte;
  while (read(plan.release_fd, &byte, 1) < 0 && errno == EINTR) {
  }
  _exit(0);
}

}  // namespace tnk::ns
