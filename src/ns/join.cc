// spawn(): a helper forked from the caller joins the sandbox's cgroups (first, while it is still host root:
// the cgroup files belong to host root), then its namespaces (user first, then mapped root, then mnt, pid,
// net, ipc, uts, cgroup) and clones the session with CLONE_PARENT, so the session is the caller's child
// inside the sandbox's pid namespace. The pty is allocated by the caller in the sandbox's devpts, reached
// through /proc/<init>/root without following any symlink.
#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "ns/cgroups.h"
#include "ns/credentials.h"
#include "ns/sandbox.h"
#include "ns/seccomp.h"
#include "ns/session.h"
#include "ns/steps.h"
#include "ns/syscalls.h"

namespace tnk::ns {

namespace {

constexpr std::chrono::milliseconds kSpawnTimeout{30000};
constexpr std::array<const char*, 7> kNsNames = {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"};
constexpr std::array<int, 7> kNsTypes = {CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,   CLONE_NEWNET,
                                         CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP};

struct JoinPlan {
  std::array<int, 7> ns_fds{};
  std::vector<int> cgroup_procs_fds;
  SessionPlan session;
};

std::string init_path(pid_t init_pid, const std::string& rest) {
  return "/proc/" + std::to_string(init_pid) + "/" + rest;
}

Result<std::array<UniqueFd, 7>> open_namespaces(pid_t init_pid) {
  std::array<UniqueFd, 7> fds;
  for (size_t i = 0; i < kNsNames.size(); ++i) {
    std::string path = init_path(init_pid, std::string("ns/") + kNsNames[i]);
    fds[i].reset(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fds[i].valid()) {
      if (errno == ENOENT) {
        return not_found("the sandbox's PID 1 (pid " + std::to_string(init_pid) + ") is not running");
      }
      return sys_error(errno, "opening " + path);
    }
  }
  return fds;
}

Result<std::vector<UniqueFd>> open_cgroup_procs(pid_t init_pid) {
  TNK_ASSIGN_OR_RETURN(auto dirs, process_cgroup_dirs(init_pid));
  std::vector<UniqueFd> fds;
  for (const auto& dir : dirs) {
    UniqueFd fd(open((dir / "cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd.valid()) return sys_error(errno, "opening " + (dir / "cgroup.procs").string());
    fds.push_back(std::move(fd));
  }
  return fds;
}

// A pty of the sandbox's own devpts instance; the slave is given to the session's uid, group tty, 0620.
Result<std::pair<UniqueFd, UniqueFd>> open_pty(pid_t init_pid, const SessionSpec& spec) {
  std::string root_path = init_path(init_pid, "root");
  UniqueFd root(open(root_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) return sys_error(errno, "opening " + root_path);
  open_how how{};
  how.flags = O_RDWR | O_NOCTTY | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  UniqueFd master(static_cast<int>(syscall(SYS_openat2, root.get(), "dev/pts/ptmx", &how, sizeof(how))));
  if (!master.valid()) return sys_error(errno, "opening /dev/pts/ptmx in the sandbox");
  int unlock = 0;
  winsize size{};
  size.ws_row = spec.rows;
  size.ws_col = spec.cols;
  if (ioctl(master.get(), TIOCSPTLCK, &unlock) != 0 || ioctl(master.get(), TIOCSWINSZ, &size) != 0) {
    return sys_error(errno, "setting up the sandbox's pty");
  }
  UniqueFd slave(ioctl(master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!slave.valid()) return sys_error(errno, "opening the sandbox's pty slave");
  uid_t uid = kHostIdBase + (spec.identity == Identity::kRoot ? 0 : kAgentId);
  if (fchown(slave.get(), uid, kHostIdBase + kTtyGid) != 0 || fchmod(slave.get(), 0620) != 0) {
    return sys_error(errno, "giving the sandbox's pty to the session's user");
  }
  return std::make_pair(std::move(master), std::move(slave));
}

[[noreturn]] void run_join_helper(const JoinPlan& plan) {
  int report = plan.session.report_fd;
  auto die = [report](Step step) {
    sys::send_report(report, static_cast<int32_t>(step), errno == 0 ? EIO : errno);
    _exit(1);
  };
  prctl(PR_SET_DUMPABLE, 0);  // a copy of the caller's memory, about to enter the sandbox
  for (int fd : plan.cgroup_procs_fds) {
    if (write(fd, "0", 1) != 1) die(Step::kSessionCgroup);  // as host root, before leaving its userns
  }
  if (setns(plan.ns_fds[0], CLONE_NEWUSER) != 0) die(Step::kSessionSetns);
  if (setgroups(0, nullptr) != 0 || setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0) die(Step::kSessionSetIds);
  for (size_t i = 1; i < plan.ns_fds.size(); ++i) {
    if (setns(plan.ns_fds[i], kNsTypes[i]) != 0) die(Step::kSessionSetns);
  }
  pid_t pid = sys::clone_process(CLONE_PARENT | SIGCHLD);
  if (pid < 0) die(Step::kCloneSession);
  if (pid == 0) run_session(plan.session);
  sys::send_report(report, static_cast<int32_t>(Step::kSessionPid), 0, pid);
  _exit(0);
}

Error session_error(Step step, int err, const SessionSpec& spec, pid_t init_pid) {
  const std::string program = spec.argv.empty() ? "" : spec.argv[0];
  switch (step) {
    case Step::kExec:
      if (err == ENOENT) return not_found("sandbox: no such program: " + program);
      return failed("sandbox: cannot execute " + program + ": " + std::strerror(err));
    case Step::kChdir: return failed("sandbox: cannot change to directory " + spec.cwd + ": " + std::strerror(err));
    case Step::kSessionCgroup: return sys_error(err, "joining the sandbox's cgroups");
    case Step::kSessionSetns:
    case Step::kSessionSetIds:
      return sys_error(err, "joining the namespaces of the sandbox's PID 1 (pid " + std::to_string(init_pid) + ")");
    case Step::kCloneSession: return sys_error(err, "creating the session process in the sandbox");
    case Step::kCapabilities: return sys_error(err, "sandbox: dropping capabilities");
    default: break;
  }
  return sys_error(err, "sandbox: starting the session (step " + std::to_string(static_cast<int>(step)) + ")");
}

// The session's pid from the helper's reports, or the error; a session that failed is reaped here.
Result<pid_t> session_outcome(const std::vector<sys::Report>& reports, Status read, const SessionSpec& spec,
                              pid_t init_pid) {
  pid_t pid = 0;
  const sys::Report* failure = nullptr;
  for (const auto& r : reports) {
    if (static_cast<Step>(r.step) == Step::kSessionPid) {
      pid = r.value;
    } else if (failure == nullptr) {
      failure = &r;
    }
  }
  if (read.ok() && failure == nullptr) {
    if (pid <= 0) return failed("sandbox: the join helper exited without starting the session");
    return pid;
  }
  if (pid > 0) {
    if (!read.ok()) kill(pid, SIGKILL);
    sys::wait_for(pid);  // it exits right after reporting
  }
  if (!read.ok()) return std::move(read).error();
  return session_error(static_cast<Step>(failure->step), failure->err, spec, init_pid);
}

}  // namespace

Result<Session> spawn(pid_t init_pid, const SessionSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) return usage_error("sandbox: no program to run");
  if (spec.cwd.empty() || spec.cwd[0] != '/') return usage_error("sandbox: the working directory must be absolute");
  TNK_ASSIGN_OR_RETURN(auto ns, open_namespaces(init_pid));
  TNK_ASSIGN_OR_RETURN(auto cgroups, open_cgroup_procs(init_pid));
  TNK_ASSIGN_OR_RETURN(int last_cap, read_last_cap());
  // The filter is the same for every session: compiled once per supervisor, not per exec.
  static const Result<std::vector<sock_filter>> compiled = build_seccomp_filter();
  if (!compiled) return compiled.error();
  const std::vector<sock_filter>& filter = *compiled;
  Session session;
  UniqueFd slave;
  if (spec.tty) {
    TNK_ASSIGN_OR_RETURN(auto pty, open_pty(init_pid, spec));
    session.pty_master = std::move(pty.first);
    slave = std::move(pty.second);
  }
  TNK_ASSIGN_OR_RETURN(auto pipe, sys::make_pipe());
  JoinPlan plan;
  for (size_t i = 0; i < ns.size(); ++i) plan.ns_fds[i] = ns[i].get();
  for (const auto& fd : cgroups) plan.cgroup_procs_fds.push_back(fd.get());
  plan.session.report_fd = pipe.second.get();
  plan.session.tty_slave = slave.valid() ? slave.get() : -1;
  plan.session.stdio[0] = spec.stdin_fd;
  plan.session.stdio[1] = spec.stdout_fd;
  plan.session.stdio[2] = spec.stderr_fd;
  plan.session.cwd = spec.cwd;
  plan.session.credentials = CredentialPlan{spec.identity, last_cap, &filter};
  fill_exec_vectors(spec, &plan.session);

  pid_t helper = fork();
  if (helper < 0) return sys_error(errno, "forking the sandbox's join helper");
  if (helper == 0) {
    close(pipe.first.get());
    run_join_helper(plan);
  }
  pipe.second.reset();
  std::vector<sys::Report> reports;
  Status read = sys::read_reports(pipe.first.get(), kSpawnTimeout, &reports);
  sys::wait_for(helper);
  TNK_ASSIGN_OR_RETURN(session.pid, session_outcome(reports, std::move(read), spec, init_pid));
  return session;
}

}  // namespace tnk::ns
