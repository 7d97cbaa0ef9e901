#include "guest/spawn.h"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "confine/readonly_view.h"
#include "confine/setid_filter.h"
#include "core/files.h"
#include "idmap/id_map.h"

extern char** environ;

namespace tnk::guest {
namespace {

// The child's steps, reported with errno through a close-on-exec pipe when one fails.
enum Step : int { kSetsid, kTerminal, kStdio, kConfine, kGroups, kGid, kUid, kChdir, kExec };

const char* step_name(int step) {
  switch (step) {
    case kSetsid: return "cannot start a new session for";
    case kTerminal: return "cannot open the terminal for";
    case kStdio: return "cannot set up stdin/stdout/stderr for";
    case kConfine: return "cannot confine the session of";
    case kGroups: return "cannot set the supplementary groups for";
    case kGid: return "cannot set the group id for";
    case kUid: return "cannot set the user id for";
    case kChdir: return "cannot change to the working directory for";
    default: return "cannot run";
  }
}

struct Report {
  int step = 0;
  int err = 0;
};

// What the child needs, prepared before fork (the child only makes async-signal-safe calls).
struct ChildPlan {
  int root_userns = -1;                                    // confined uid 0: session_userns(kRootSession)
  int provision_userns = -1;                               // agent with readonly_mount: session_userns(kProvision)
  const std::vector<sock_filter>* setid_filter = nullptr;  // confined agent sessions
  std::vector<char*> argv, envp;
  std::vector<gid_t> groups;
  const agent::ExecRequest* request = nullptr;
  std::string pty_slave;            // tty mode
  int in = -1, out = -1, err = -1;  // pipe mode: the child's ends
};

// Puts `fd` on `target` without the close-on-exec flag, even when fd already is `target`.
bool place(int fd, int target) {
  int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);  // never clobbers 0..2 while they are being set
  if (copy < 0) return false;
  return ::dup2(copy, target) == target;  // the copy itself closes at exec
}

[[noreturn]] void fail(int report_fd, int step) {
  Report r{step, errno};
  (void)!::write(report_fd, &r, sizeof r);
  ::_exit(127);
}

[[noreturn]] void run_child(const ChildPlan& plan, int report_fd) {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) ::sigaction(s, &dfl, nullptr);  // SIGKILL/SIGSTOP just fail
  if (::setsid() < 0) fail(report_fd, kSetsid);
  if (!plan.pty_slave.empty()) {
    int tty = ::open(plan.pty_slave.c_str(), O_RDWR | O_CLOEXEC);
    if (tty < 0 || ::ioctl(tty, TIOCSCTTY, 0) != 0) fail(report_fd, kTerminal);
    if (!place(tty, 0) || !place(tty, 1) || !place(tty, 2)) fail(report_fd, kStdio);
  } else if (!place(plan.in, 0) || !place(plan.out, 1) || !place(plan.err, 2)) {
    fail(report_fd, kStdio);
  }
  const agent::ExecRequest& r = *plan.request;
  // The read-only view is made by the guest's root, in the guest's first user namespace; the session
  // then moves to a user namespace of its own and a mount namespace copied there, where root (provisioning's
  // root phase) can neither remount the view read-write nor mount the project again (the kernel locks the
  // copied mounts, and virtiofs cannot be mounted outside the guest's first user namespace).
  if (!r.readonly_mount.empty() && confine::make_readonly_view(r.readonly_mount.c_str()) != 0)
    fail(report_fd, kConfine);
  int userns = plan.root_userns >= 0 ? plan.root_userns : plan.provision_userns;
  if (userns >= 0 && ::setns(userns, CLONE_NEWUSER) != 0) fail(report_fd, kConfine);
  if (!r.readonly_mount.empty() && ::unshare(CLONE_NEWNS) != 0) fail(report_fd, kConfine);
  if (r.confined && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail(report_fd, kConfine);
  bool change_ids = ::geteuid() == 0 || r.uid != ::getuid() || r.gid != ::getgid();
  if (change_ids) {
    if (::setgroups(plan.groups.size(), plan.groups.data()) != 0) fail(report_fd, kGroups);
    if (::setgid(r.gid) != 0) fail(report_fd, kGid);
    if (::setuid(r.uid) != 0) fail(report_fd, kUid);
  }
  if (plan.setid_filter != nullptr && confine::load_seccomp_program(*plan.setid_filter) != 0) {
    fail(report_fd, kConfine);
  }
  if (::chdir(r.cwd.c_str()) != 0) fail(report_fd, kChdir);
  environ = const_cast<char**>(plan.envp.data());  // execvp looks argv[0] up in this PATH
  ::execvp(plan.argv[0], plan.argv.data());
  fail(report_fd, kExec);
}

Status set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) return sys_error(errno, "fcntl O_NONBLOCK");
  return ok_status();
}

Result<UniqueFd> open_pty(const agent::ExecRequest& r, std::string& slave) {
  UniqueFd master(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!master.valid()) return sys_error(errno, "cannot open a pseudo-terminal (/dev/ptmx)");
  char name[128];
  if (::grantpt(master.get()) != 0 || ::unlockpt(master.get()) != 0 ||
      ::ptsname_r(master.get(), name, sizeof name) != 0) {
    return sys_error(errno, "cannot unlock a pseudo-terminal");
  }
  slave = name;
  winsize ws{};
  ws.ws_row = r.rows;
  ws.ws_col = r.cols;
  ::ioctl(master.get(), TIOCSWINSZ, &ws);
  if (::geteuid() == 0) (void)!::chown(name, r.uid, static_cast<gid_t>(-1));  // as a login would
  TNK_RETURN_IF_ERROR(set_nonblocking(master.get()));
  return master;
}

// The child's failure, or nullopt when its exec succeeded (the pipe closed without a report).
std::optional<Error> wait_report(int report_fd, pid_t pid, const agent::ExecRequest& r) {
  Report report;
  ssize_t got;
  do {
    got = ::read(report_fd, &report, sizeof report);
  } while (got < 0 && errno == EINTR);
  if (got != static_cast<ssize_t>(sizeof report)) return std::nullopt;
  int status;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string what = std::string(step_name(report.step)) + " " + r.argv[0];
  if (report.step == kChdir) what += " (" + r.cwd + ")";
  Error error = sys_error(report.err, what);
  bool missing = report.step == kExec && (report.err == ENOENT || report.err == ENOTDIR);
  error.kind = missing ? ErrorKind::kNotFound : ErrorKind::kFailed;
  return error;
}

// The user namespaces sessions enter, made once each:
// - kRootSession, for confined root sessions: every id of the guest but the agent's (1000) mapped onto
//   itself. Root keeps uid 0 (root-owned files stay its own, /proc/sys answers it), but no capability
//   acts on the agent's files, which the namespace does not map: the project on virtiofs.
// - kProvision, for the agent phase of provisioning (a confined root session uses kRootSession): every id
//   0..65535 onto itself, so the agent's files stay the agent's, in a mount namespace of its own that
//   cannot undo the read-only project.
enum UsernsKind { kRootSession, kProvision, kUsernsKinds };

Result<int> session_userns(UsernsKind kind) {
  static int fds[kUsernsKinds] = {-1, -1};
  int& fd = fds[kind];
  if (fd >= 0) return fd;
  TNK_ASSIGN_OR_RETURN(Pipe ready, make_pipe());
  pid_t holder = ::fork();
  if (holder < 0) return sys_error(errno, "cannot fork to make a user namespace for the sessions");
  if (holder == 0) {
    char byte = ::unshare(CLONE_NEWUSER) == 0 ? 0 : 1;
    (void)!::write(ready.write_end.get(), &byte, 1);
    ::pause();
    ::_exit(0);
  }
  ready.write_end.reset();
  char byte = 1;
  Status made = ::read(ready.read_end.get(), &byte, 1) == 1 && byte == 0
                    ? ok_status()
                    : failed("cannot make a user namespace for the sessions");
  const idmap::IdMap map_entries =
      kind == kRootSession ? idmap::agentless_map(idmap::kAgentId) : idmap::IdMap{{0, 0, idmap::kInsideIdCount}};
  const std::string map = idmap::proc_map_text(map_entries);
  for (const char* file : {"uid_map", "gid_map"}) {
    if (made.ok()) made = write_kernel_file("/proc/" + std::to_string(holder) + "/" + file, map);
  }
  int opened = -1;
  if (made.ok()) {
    std::string path = "/proc/" + std::to_string(holder) + "/ns/user";
    opened = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (opened < 0) made = sys_error(errno, "cannot open " + path);
  }
  ::kill(holder, SIGKILL);
  while (::waitpid(holder, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (!made.ok()) return made.error();
  fd = opened;
  return fd;
}

}  // namespace

int spawn_failure_code(const Error& error) { return error.kind == ErrorKind::kNotFound ? 127 : 126; }

Result<SpawnedProcess> spawn_session(const agent::ExecRequest& r) {
  ChildPlan plan;
  plan.request = &r;
  if (r.confined && r.uid == 0) {
    TNK_ASSIGN_OR_RETURN(plan.root_userns, session_userns(kRootSession));
  }
  if (!r.readonly_mount.empty() && plan.root_userns < 0) {
    TNK_ASSIGN_OR_RETURN(plan.provision_userns, session_userns(kProvision));
  }
  static const std::vector<sock_filter> setid_filter = confine::setid_mode_filter();
  if (r.confined && r.uid != 0) plan.setid_filter = &setid_filter;
  for (const auto& a : r.argv) plan.argv.push_back(const_cast<char*>(a.c_str()));
  plan.argv.push_back(nullptr);
  for (const auto& e : r.env) plan.envp.push_back(const_cast<char*>(e.c_str()));
  plan.envp.push_back(nullptr);
  plan.groups.assign(r.groups.begin(), r.groups.end());
  if (plan.groups.empty()) plan.groups.push_back(r.gid);

  SpawnedProcess p;
  Pipe in, out, err;
  if (r.tty) {
    TNK_ASSIGN_OR_RETURN(p.pty_master, open_pty(r, plan.pty_slave));
  } else {
    TNK_ASSIGN_OR_RETURN(in, make_pipe());
    TNK_ASSIGN_OR_RETURN(out, make_pipe());
    TNK_ASSIGN_OR_RETURN(err, make_pipe());
    plan.in = in.read_end.get();
    plan.out = out.write_end.get();
    plan.err = err.write_end.get();
  }
  TNK_ASSIGN_OR_RETURN(Pipe report, make_pipe());
  pid_t pid = ::fork();
  if (pid < 0) return sys_error(errno, "cannot fork for " + r.argv[0]);
  if (pid == 0) run_child(plan, report.write_end.get());
  report.write_end.reset();
  if (std::optional<Error> failure = wait_report(report.read_end.get(), pid, r)) return *failure;
  p.pid = pid;
  if (!r.tty) {
    p.stdin_w = std::move(in.write_end);
    p.stdout_r = std::move(out.read_end);
    p.stderr_r = std::move(err.read_end);
    for (int fd : {p.stdin_w.get(), p.stdout_r.get(), p.stderr_r.get()}) TNK_RETURN_IF_ERROR(set_nonblocking(fd));
  }
  return p;
}

}  // namespace tnk::guest
