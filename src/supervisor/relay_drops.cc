#include "supervisor/relay_drops.h"

#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>

#include "idmap/root_ranges.h"

namespace tnk::supervisor {
namespace {

// What a relay calls: sockets, polling, memory, threads, time, signals, exit, and reading the
// resolver's files (/etc/resolv.conf, /etc/hosts, nsswitch and its libraries, for getaddrinfo).
constexpr const char* kAllowed[] = {"read",
                                    "write",
                                    "readv",
                                    "writev",
                                    "pread64",
                                    "close",
                                    "lseek",
                                    "openat",
                                    "newfstatat",
                                    "fstat",
                                    "statx",
                                    "fcntl",
                                    "dup",
                                    "dup2",
                                    "dup3",
                                    "pipe2",
                                    "socket",
                                    "socketpair",  // the route gateway's TLS pump
                                    "connect",
                                    "accept",
                                    "accept4",
                                    "bind",
                                    "listen",
                                    "getsockname",
                                    "getpeername",
                                    "getsockopt",
                                    "setsockopt",
                                    "shutdown",
                                    "sendto",
                                    "recvfrom",
                                    "sendmsg",
                                    "recvmsg",
                                    "sendmmsg",
                                    "recvmmsg",
                                    "poll",
                                    "ppoll",
                                    "select",
                                    "pselect6",
                                    "epoll_create1",
                                    "epoll_ctl",
                                    "epoll_wait",
                                    "epoll_pwait",
                                    "eventfd2",
                                    "signalfd4",
                                    "timerfd_create",
                                    "timerfd_settime",
                                    "rt_sigaction",
                                    "rt_sigprocmask",
                                    "rt_sigreturn",
                                    "sigaltstack",
                                    "restart_syscall",
                                    "kill",
                                    "tgkill",
                                    "getpid",
                                    "gettid",
                                    "getppid",
                                    "getuid",
                                    "geteuid",
                                    "getgid",
                                    "getegid",
                                    "uname",
                                    "getrandom",
                                    "clock_gettime",
                                    "clock_nanosleep",
                                    "nanosleep",
                                    "gettimeofday",
                                    "brk",
                                    "mmap",
                                    "munmap",
                                    "mremap",
                                    "mprotect",
                                    "madvise",
                                    "futex",
                                    "set_robust_list",
                                    "rseq",
                                    "sched_yield",
                                    "sched_getaffinity",
                                    "exit",
                                    "exit_group",
                                    "wait4",
                                    "access",
                                    "faccessat",
                                    "faccessat2",
                                    "readlink",
                                    "readlinkat",
                                    "set_tid_address",
                                    "prlimit64",
                                    "getrlimit",
                                    "membarrier"};

struct FilterDeleter {
  void operator()(scmp_filter_ctx ctx) const { seccomp_release(ctx); }
};

Status load_relay_filter() {
  std::unique_ptr<void, FilterDeleter> ctx(seccomp_init(SCMP_ACT_ERRNO(EPERM)));
  if (!ctx) return failed("building the relay's seccomp filter: seccomp_init failed");
  // Threads (a thread per connection, and for each name lookup), but no new process: clone only with
  // CLONE_THREAD; clone3, whose flags seccomp cannot read, answers ENOSYS so that libc uses clone.
  if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                                SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
      rc != 0) {
    return sys_error(-rc, "allowing threads in the relay's seccomp filter");
  }
  if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0); rc != 0) {
    return sys_error(-rc, "refusing clone3 in the relay's seccomp filter");
  }
  for (const char* name : kAllowed) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, nr, 0); rc != 0) {
      return sys_error(-rc, std::string("allowing ") + name + " in the relay's seccomp filter");
    }
  }
  if (int rc = seccomp_load(ctx.get()); rc != 0) return sys_error(-rc, "loading the relay's seccomp filter");
  return ok_status();
}

// The bounding set first: dropping from it needs CAP_SETPCAP, which the change of ids and capset then
// clear. (A rootless relay that never joined a namespace has no capability to drop: EPERM there is fine.)
Status drop_bounding_set() {
  for (int cap = 0; cap <= CAP_LAST_CAP; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL && errno != EPERM) {
      return sys_error(errno, "dropping the relay's bounding set");
    }
  }
  return ok_status();
}

Status clear_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capset, &header, data) != 0) return sys_error(errno, "dropping the relay's capabilities");
  return ok_status();
}

// Run by root: the account's ids, no supplementary group. Setting non-zero ids clears the permitted,
// effective and ambient sets; it also clears the parent-death signal, set again here, with a
// supervisor that ended in between caught. The working directory stays the state directory, which the
// account cannot search: a relay opens no relative path.
Status become_account(const RelayAccount& account) {
  const pid_t supervisor = ::getppid();  // still the supervisor: the death signal is armed until now
  if (::setgroups(0, nullptr) != 0 || ::setresgid(account.gid, account.gid, account.gid) != 0 ||
      ::setresuid(account.uid, account.uid, account.uid) != 0) {
    return sys_error(errno,
                     "giving the relay the ids " + std::to_string(account.uid) + ":" + std::to_string(account.gid));
  }
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return sys_error(errno, "setting the relay's parent-death signal");
  if (::getppid() != supervisor) ::_exit(0);
  return ok_status();
}

}  // namespace

Result<std::optional<RelayAccount>> relay_account() {
  if (::geteuid() != 0) return std::optional<RelayAccount>();
  const idmap::RootRanges ranges = idmap::root_ranges();
  if (!ranges.reserved) {
    return failed("run by root, a relay needs an id of root's own subordinate range, and root has none",
                  "sudo tnk setup --user root");
  }
  return std::optional<RelayAccount>(
      RelayAccount{ranges.uids.start + idmap::kHelperRangeId, ranges.gids.start + idmap::kHelperRangeId});
}

Status drop_relay_privileges(std::vector<int> keep, const std::optional<RelayAccount>& account) {
  keep.insert(keep.end(), {0, 1, 2});
  std::sort(keep.begin(), keep.end());
  unsigned next = 0;
  for (int fd : keep) {
    if (fd < 0) continue;
    if (static_cast<unsigned>(fd) > next) ::close_range(next, static_cast<unsigned>(fd) - 1, 0);
    next = static_cast<unsigned>(fd) + 1;
  }
  ::close_range(next, ~0U, 0);
  TNK_RETURN_IF_ERROR(drop_bounding_set());
  if (account) TNK_RETURN_IF_ERROR(become_account(*account));
  TNK_RETURN_IF_ERROR(clear_capabilities());
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return sys_error(errno, "setting no_new_privs in the relay");
  return load_relay_filter();
}

}  // namespace tnk::supervisor
