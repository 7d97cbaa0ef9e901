#include "backend/vm/processes.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string_view>
#include <thread>

#include "confine/setid_filter.h"
#include "core/strings.h"
#include "core/subprocess.h"
#include "core/unique_fd.h"
#include "core/unix_address.h"
#include "idmap/userns.h"
#include "linux/cgroups.h"
#include "linux/protect_paths.h"
#include "linux/syscalls.h"

namespace tnk::vm {
namespace {

// The maps of QEMU's own user namespace (rootless): the user as itself, prepared before fork.
struct QemuIds {
  std::string uid_map, gid_map;
};

// In a forked child: stdin from /dev/null, stdout and stderr to `log_fd`, killed with the supervisor.
int child_stdio(int log_fd) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return errno;
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) return errno;
  if (::dup2(null_fd, 0) < 0 || ::dup2(log_fd, 1) < 0 || ::dup2(log_fd, 2) < 0) return errno;
  return 0;
}

// The project bound under a fresh /run (virtiofsd's source) in a mount namespace of its own, with its
// protected paths read-only there: every write the guest sends through virtiofsd meets the host's
// read-only mount (EROFS), and a rename or removal of a pinned parent EBUSY; nothing in the guest can
// remount what its kernel never mounted.
// Review mode: an overlay (lower the project, upper the layer) where the bind would be, its layers named
// by fds opened in this namespace (no host path in the options, so none needs escaping); mounted with the
// options the ns backend uses (backend/ns/mounts.cc), so the layer reads the same (review/diff.h).
int mount_review_overlay(const char* project, const char* source, const char* upper, const char* work) {
  UniqueFd lower_fd(::open(project, O_PATH | O_DIRECTORY | O_CLOEXEC));
  UniqueFd upper_fd(::open(upper, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  UniqueFd work_fd(::open(work, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!lower_fd.valid() || !upper_fd.valid() || !work_fd.valid()) return errno;
  linux::sys::CharBuf options;
  options.add("lowerdir=").add(linux::sys::fd_path(lower_fd.get()).c_str());
  options.add(",upperdir=").add(linux::sys::fd_path(upper_fd.get()).c_str());
  options.add(",workdir=").add(linux::sys::fd_path(work_fd.get()).c_str());
  options.add(",userxattr,metacopy=off");
  if (options.overflowed()) return ENAMETOOLONG;
  return ::mount("overlay", source, "overlay", MS_NOSUID | MS_NODEV, options.c_str()) == 0 ? 0 : errno;
}

// `review_upper` null: direct mode.
int bind_project(const char* project, const char* source, const char* run_options,
                 const std::vector<std::string>& protected_paths, const char* review_upper, const char* review_work) {
  if (::unshare(CLONE_NEWNS) != 0) return errno;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return errno;
  if (::mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, run_options) != 0) return errno;
  if (::mkdir(source, 0755) != 0) return errno;
  if (review_upper != nullptr) {
    if (int e = mount_review_overlay(project, source, review_upper, review_work); e != 0) return e;
  } else if (::mount(project, source, nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    return errno;
  }
  if (protected_paths.empty()) return 0;
  UniqueFd top(::open(source, O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!top.valid()) return errno;
  return linux::protect_paths(top.get(), protected_paths).err;
}

// In virtiofsd's child, now `run_as` in its user namespace (not that namespace's root, which is unmapped):
// the capabilities it holds there, made ambient so that they survive exec (virtiofsd itself then keeps
// only those it needs). Setting the ids with keep-caps kept the permitted set; effective and inheritable
// are set to it, and ambient raised for every capability the kernel has (past the last one: EINVAL).
int keep_capabilities_across_exec() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
  if (::syscall(SYS_capget, &header, data) != 0) return errno;
  for (auto& word : data) word.effective = word.inheritable = word.permitted;
  if (::syscall(SYS_capset, &header, data) != 0) return errno;
  for (int cap = 0; cap < 64; ++cap) {
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) != 0) return errno == EINVAL ? 0 : errno;
  }
  return 0;
}

// virtiofsd's child, before exec (async-signal-safe calls only): the project bound, the user namespace
// entered as `run_as` (the agent's id, the owner's: virtiofsd_argv.h), the set-id filter loaded, the
// socket on fd 3. Run as root the bind comes first, made as host root (whom the namespace does not
// map); rootless, the namespace comes first: it gives the user the right to mount, and the user
// (`agent` there) looks the project up as itself.
int virtiofsd_setup(int log_fd, int userns_fd, int listen_fd, uint64_t nofile, uint32_t run_as, const char* project,
                    const char* source, const char* run_options, const std::vector<std::string>& protected_paths,
                    const char* review_upper, const char* review_work, bool rootless,
                    const std::vector<int>& cgroup_procs, const std::vector<sock_filter>& setid_filter) {
  if (int e = linux::join_cgroups(cgroup_procs); e != 0) return e;
  if (int e = child_stdio(log_fd); e != 0) return e;
  // Raising the hard limit needs CAP_SYS_RESOURCE, which a container may lack: then the hard limit it has.
  rlimit limit{nofile, nofile};
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return errno;
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) return errno;
  }
  if (!rootless) {
    if (int e = bind_project(project, source, run_options, protected_paths, review_upper, review_work); e != 0) {
      return e;
    }
    if (::setgroups(0, nullptr) != 0) return errno;
  }
  if (::setns(userns_fd, CLONE_NEWUSER) != 0) return errno;
  if (rootless) {
    if (int e = bind_project(project, source, run_options, protected_paths, review_upper, review_work); e != 0) {
      return e;
    }
    if (::setgroups(0, nullptr) != 0) return errno;
  }
  if (::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) return errno;
  if (::setresgid(run_as, run_as, run_as) != 0 || ::setresuid(run_as, run_as, run_as) != 0) return errno;
  if (int e = keep_capabilities_across_exec(); e != 0) return e;
  // Filters stack: virtiofsd adds its own allow-list on top. Threads it starts later inherit both.
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  if (confine::load_seccomp_program(setid_filter) != 0) return errno;
  if (listen_fd == 3) {
    if (::fcntl(3, F_SETFD, 0) != 0) return errno;
  } else if (::dup2(listen_fd, 3) < 0) {
    return errno;
  }
  return 0;
}

// Writes `text` to /proc/self/<file> (after fork: system calls only).
int write_self(const char* file, std::string_view text) {
  char path[64] = "/proc/self/";
  std::strncat(path, file, sizeof(path) - std::strlen(path) - 1);
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) ? 0 : errno;
  ::close(fd);
  return err;
}

// QEMU's child, before exec: a network namespace of its own with only loopback, up. QEMU's user
// network opens its host sockets there (the bridge's hostfwd), so no other host process reaches them and
// the guest could reach nothing of the host's network even if slirp's restrict=on failed. Rootless, a
// user namespace of QEMU's own comes first (it maps only the user, as itself): making a network
// namespace needs one, and QEMU execs with no capability in it.
int own_network(const QemuIds* rootless) {
  if (rootless != nullptr) {
    if (::unshare(CLONE_NEWUSER) != 0) return errno;
    if (int e = write_self("uid_map", rootless->uid_map); e != 0) return e;
    if (int e = write_self("setgroups", std::string_view("deny")); e != 0) return e;
    if (int e = write_self("gid_map", rootless->gid_map); e != 0) return e;
  }
  if (::unshare(CLONE_NEWNET) != 0) return errno;
  int sock = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock < 0) return errno;
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, "lo", 3);
  int rc = ::ioctl(sock, SIOCGIFFLAGS, &ifr);
  if (rc == 0) {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
    rc = ::ioctl(sock, SIOCSIFFLAGS, &ifr);
  }
  int err = rc == 0 ? 0 : errno;
  ::close(sock);
  return err;
}

// The descriptors QEMU is handed, at their numbers (after fork: system calls only). Each is first copied
// above every number handed, so that none is overwritten before it is copied.
int hand_fds(const std::vector<std::pair<int, int>>& handed) {
  constexpr size_t kMax = 16;
  constexpr int kAbove = 64;  // above vm::handed_fd::kLast
  int high[kMax];
  if (handed.size() > kMax) return EMFILE;
  for (size_t i = 0; i < handed.size(); ++i) {
    high[i] = ::fcntl(handed[i].first, F_DUPFD_CLOEXEC, kAbove);
    if (high[i] < 0) return errno;
  }
  for (size_t i = 0; i < handed.size(); ++i) {
    if (::dup2(high[i], handed[i].second) < 0) return errno;  // the copy at its number is inherited
    ::close(high[i]);
  }
  return 0;
}

// Run by root, QEMU's child after its network namespace is made: the account's ids and no capability.
// Setting the ids to non-zero ones clears the permitted, effective and ambient sets; the bounding set is
// emptied first, while it may still be. A change of effective ids also clears the parent-death signal:
// it is set again, and a supervisor that ended in between is caught.
int become_unprivileged(const UnprivilegedQemu& u, pid_t supervisor) {
  for (int cap = 0; cap < 64; ++cap) {  // past the kernel's last one: EINVAL
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return errno;
  }
  gid_t kvm = u.kvm_gid.value_or(0);
  if (::setgroups(u.kvm_gid ? 1 : 0, &kvm) != 0) return errno;
  if (::setresgid(u.account.gid, u.account.gid, u.account.gid) != 0) return errno;
  if (::setresuid(u.account.uid, u.account.uid, u.account.uid) != 0) return errno;
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return errno;
  if (::getppid() != supervisor) return ESRCH;
  // The supervisor's working directory (the state directory) is not the account's to search.
  return ::chdir("/") == 0 ? 0 : errno;
}

// virtiofsd's user namespace, with the plan's maps. Run by root, made as they are. Rootless, newgidmap
// would deny `setgroups` in a namespace that maps only the user's own gid, and virtiofsd must drop the
// user's supplementary groups (they would give its files groups of the user's): so the namespace is
// made inside a rootless sandbox's (idmap::sandbox_maps, where `setgroups` is allowed), mapping only
// `run_as` onto that namespace's `run_as`, which is the user.
Result<UniqueFd> virtiofsd_userns(const VirtiofsdPlan& plan, bool rootless) {
  if (!rootless) return idmap::create_userns({plan.uid_map, plan.gid_map});
  TNK_ASSIGN_OR_RETURN(idmap::RootlessIds ids, idmap::rootless_ids());
  if (idmap::outside_id(plan.uid_map, plan.run_as) != ids.uid ||
      idmap::outside_id(plan.gid_map, plan.run_as) != ids.gid) {
    return failed("virtiofsd's plan gives the guest's agent ids other than yours (" + std::to_string(ids.uid) + ":" +
                  std::to_string(ids.gid) + ")");
  }
  TNK_ASSIGN_OR_RETURN(UniqueFd outer, idmap::create_userns(idmap::sandbox_maps(ids, plan.run_as)));
  const idmap::IdMap itself = {{plan.run_as, plan.run_as, 1}};
  return idmap::create_userns({itself, itself, false, outer.get()});
}

}  // namespace

Result<UniqueFd> connect_unix(const std::filesystem::path& path) {
  TNK_ASSIGN_OR_RETURN(sockaddr_un addr, unix_address(path, "the socket"));
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sys_error(errno, "creating a unix socket");
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return sys_error(errno, "connecting to " + path.string());
  }
  return fd;
}

Result<UniqueFd> listen_unix(const std::filesystem::path& path) {
  TNK_ASSIGN_OR_RETURN(sockaddr_un addr, unix_address(path, "the socket"));
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sys_error(errno, "creating a unix socket");
  ::unlink(path.c_str());
  mode_t old = ::umask(0177);
  int bound = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::umask(old);
  if (bound != 0) return sys_error(errno, "binding " + path.string());
  if (::listen(fd.get(), SOMAXCONN) != 0) return sys_error(errno, "listening on " + path.string());
  return fd;
}

Result<pid_t> start_virtiofsd(const vm::VirtiofsdPlan& plan, const std::filesystem::path& project_dir,
                              const std::filesystem::path& plan_source, const std::vector<std::string>& protected_paths,
                              const std::optional<ReviewDirs>& review, int listen_fd, int log_fd,
                              const std::vector<int>& cgroup_procs) {
  const bool rootless = ::geteuid() != 0;
  const uint32_t run_as = plan.run_as;
  TNK_ASSIGN_OR_RETURN(UniqueFd userns, virtiofsd_userns(plan, rootless));
  // The tmpfs belongs to the id virtiofsd runs as: as the mounter sees it (the namespace's id rootless,
  // the host's run as root).
  auto owner_uid = rootless ? std::optional<uint32_t>(run_as) : idmap::outside_id(plan.uid_map, run_as);
  auto owner_gid = rootless ? std::optional<uint32_t>(run_as) : idmap::outside_id(plan.gid_map, run_as);
  if (!owner_uid || !owner_gid) return failed("virtiofsd's plan does not map the id it runs as");
  std::string run_options =
      "mode=0755,size=1m,uid=" + std::to_string(*owner_uid) + ",gid=" + std::to_string(*owner_gid);
  const std::vector<sock_filter> setid_filter = confine::setid_mode_filter();
  std::string project = project_dir.string(), source = plan_source.string();
  std::string upper = review ? review->upper.string() : "", work = review ? review->work.string() : "";
  const char* review_upper = review ? upper.c_str() : nullptr;
  int userns_fd = userns.get();
  uint64_t nofile = plan.nofile_limit;
  auto started = start_process(plan.argv, [&]() {
    return virtiofsd_setup(log_fd, userns_fd, listen_fd, nofile, run_as, project.c_str(), source.c_str(),
                           run_options.c_str(), protected_paths, review_upper, work.c_str(), rootless, cgroup_procs,
                           setid_filter);
  });
  if (!started) {
    std::string what = "starting virtiofsd for " + project;
    if (!protected_paths.empty()) what += " (with " + join(protected_paths) + " read-only)";
    if (review) what += " under its review layer " + upper;
    return started.error().context(what);
  }
  return *started;
}

Result<pid_t> start_qemu(const std::vector<std::string>& argv, int log_fd, const UnprivilegedQemu* unprivileged,
                         const std::vector<int>& cgroup_procs) {
  const std::string uid = std::to_string(::getuid()), gid = std::to_string(::getgid());
  const QemuIds ids{uid + " " + uid + " 1\n", gid + " " + gid + " 1\n"};
  const bool root = ::geteuid() == 0;
  const QemuIds* rootless = root ? nullptr : &ids;
  // Run by root, never as root: without the account to run as, QEMU does not start.
  if (root && unprivileged == nullptr) return failed("starting QEMU: run by root, it needs an account to run as");
  const pid_t supervisor = ::getpid();
  auto started = start_process(argv, [log_fd, rootless, unprivileged, supervisor, &cgroup_procs]() {
    if (int e = linux::join_cgroups(cgroup_procs); e != 0) return e;  // while its ids are the supervisor's
    if (int e = child_stdio(log_fd); e != 0) return e;
    if (int e = own_network(rootless); e != 0) return e;
    if (unprivileged != nullptr) {
      if (int e = hand_fds(unprivileged->handed); e != 0) return e;
      if (int e = become_unprivileged(*unprivileged, supervisor); e != 0) return e;
    }
    // QEMU's own -sandbox refuses privilege changes too; this holds before it parses its arguments.
    return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 ? 0 : errno;
  });
  if (!started) return started.error().context("starting QEMU");
  return *started;
}

bool wait_child(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    pid_t got = ::waitpid(pid, nullptr, WNOHANG);
    if (got == pid || (got < 0 && errno == ECHILD)) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

namespace {

// One QMP command without arguments, answered within `timeout`.
Status qmp_execute(const std::filesystem::path& socket, const std::string& command, std::chrono::milliseconds timeout) {
  TNK_ASSIGN_OR_RETURN(sockaddr_un addr, unix_address(socket, "QEMU's QMP socket"));
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sys_error(errno, "creating a unix socket");
  timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return sys_error(errno, "connecting to QMP at " + socket.string());
  }
  // Each command is answered before the next is sent: the greeting, then capabilities, then `command`,
  // whose answer ("return" or "error") may follow events it caused (a stop's STOP comes before its flush).
  char buf[4096];
  for (const std::string& line :
       {std::string(), std::string("{\"execute\":\"qmp_capabilities\"}\n"), "{\"execute\":\"" + command + "\"}\n"}) {
    if (!line.empty() && ::send(fd.get(), line.data(), line.size(), MSG_NOSIGNAL) < 0) {
      return sys_error(errno, "writing to QMP");
    }
    std::string answer;
    while (answer.find(line.empty() ? "\"QMP\"" : "\"return\"") == std::string::npos) {
      if (answer.find("\"error\"") != std::string::npos) return failed("QMP refused " + command + ": " + answer);
      ssize_t got = ::recv(fd.get(), buf, sizeof buf, 0);
      if (got <= 0) {
        if (command == "quit" && !answer.empty()) break;  // quit may close before its answer
        return failed("QMP did not answer " + command);
      }
      answer.append(buf, static_cast<size_t>(got));
    }
  }
  return ok_status();
}

}  // namespace

Status qmp_quit(const std::filesystem::path& socket, std::chrono::milliseconds timeout) {
  return qmp_execute(socket, "quit", timeout);
}

Status qmp_pause(const std::filesystem::path& socket, bool held) {
  return qmp_execute(socket, held ? "stop" : "cont", std::chrono::seconds(10));
}

}  // namespace tnk::vm
