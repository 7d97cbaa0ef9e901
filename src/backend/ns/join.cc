// Joiner and spawn(): the joiner, forked from the caller, joins the sandbox's cgroups (first, while it is
// still the caller's uid: the cgroup files belong to the caller), then its namespaces (user first, then
// mapped root, then mnt, pid, net, ipc, uts, cgroup), sends the caller an fd of the sandbox's root, and
// clones each session with CLONE_PARENT, so the session is the caller's child inside the sandbox's pid
// namespace. The pty is allocated by the caller in the sandbox's devpts, reached through that root fd
// without following any symlink (/proc/<init>/root needs ptrace access that a rootless caller lacks).
#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <optional>
#include <utility>

#include "backend/ns/credentials.h"
#include "backend/ns/joiner.h"
#include "backend/ns/sandbox.h"
#include "backend/ns/seccomp.h"
#include "backend/ns/session.h"
#include "backend/ns/steps.h"
#include "confine/setid_filter.h"
#include "linux/cgroups.h"
#include "linux/syscalls.h"
#include "session/messages.h"
#include "session/protocol.h"

namespace tnk::ns {

namespace {

constexpr std::chrono::milliseconds kSpawnTimeout{30000};
struct JoinerPlan {
  std::array<int, kNsCount> ns_fds{};
  std::vector<int> cgroup_procs_fds;
  int channel = -1;
  int report_fd = -1;
  CredentialPlan credentials;  // identity filled in per session
};

// The sandbox's own cgroups (tnk-*); a sandbox that got none (no delegation) runs in its caller's.
Result<std::vector<UniqueFd>> open_cgroup_procs(pid_t init_pid) {
  TNK_ASSIGN_OR_RETURN(auto dirs, linux::process_cgroup_dirs(init_pid));
  std::vector<UniqueFd> fds;
  for (const auto& dir : dirs) {
    if (dir.filename().string().rfind("tnk-", 0) != 0) continue;
    UniqueFd fd(open((dir / "cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd.valid()) return sys_error(errno, "opening " + (dir / "cgroup.procs").string());
    fds.push_back(std::move(fd));
  }
  return fds;
}

// A pty of the sandbox's own devpts instance (the session gives the slave to its user: session.cc).
Result<std::pair<UniqueFd, UniqueFd>> open_pty(int root, const SessionSpec& spec) {
  open_how how{};
  how.flags = O_RDWR | O_NOCTTY | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  UniqueFd master(static_cast<int>(syscall(SYS_openat2, root, "dev/pts/ptmx", &how, sizeof(how))));
  if (!master.valid()) return sys_error(errno, "opening /dev/pts/ptmx in the sandbox");
  int unlock = 0;
  winsize size{};
  size.ws_row = spec.request.rows;
  size.ws_col = spec.request.cols;
  if (ioctl(master.get(), TIOCSPTLCK, &unlock) != 0 || ioctl(master.get(), TIOCSWINSZ, &size) != 0) {
    return sys_error(errno, "setting up the sandbox's pty");
  }
  UniqueFd slave(ioctl(master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!slave.valid()) return sys_error(errno, "opening the sandbox's pty slave");
  // Run as root, the slave is host root's, whom the sandbox does not map; given to the sandbox's root
  // (on the host, the owner of the sandbox's `/`), it is one the session may chown. (A rootless caller
  // is mapped: it is `agent`.)
  struct stat top {};
  if (geteuid() == 0 && (fstat(root, &top) != 0 || fchown(slave.get(), top.st_uid, top.st_gid) != 0)) {
    return sys_error(errno, "giving the sandbox's pty to the sandbox's root");
  }
  return std::make_pair(std::move(master), std::move(slave));
}

// Everything the joiner inherited from the supervisor but what it needs is closed: it must not hold
// the supervisor's clients, listener or log open.
void close_all_but(std::vector<int> keep) {
  std::sort(keep.begin(), keep.end());
  unsigned next = 0;
  for (int fd : keep) {
    if (static_cast<unsigned>(fd) > next) close_range(next, static_cast<unsigned>(fd) - 1, 0);
    next = static_cast<unsigned>(fd) + 1;
  }
  close_range(next, ~0U, 0);
}

// One request from Joiner::spawn: the session's spec, with its report pipe and stdio or tty fds. On the
// channel the spec's request is the control protocol's own exec message (session/messages.h), with
// the host side's additions beside it.
struct Request {
  SessionSpec spec;
  std::vector<UniqueFd> fds;  // [0] report; then the tty slave, or the stdio fds that were given
  std::vector<bool> stdio_given;
};

std::optional<Request> receive_request(int channel) {
  auto message = session::recv_message(channel);
  if (!message || !*message) return std::nullopt;
  try {
    const auto& body = (*message)->body;
    auto request = session::exec_request_from_json(body);
    if (!request) return std::nullopt;
    Request r;
    r.spec.request = std::move(*request);
    r.spec.readonly_mount = body.at("readonly_mount").get<std::string>();
    r.stdio_given = body.at("stdio").get<std::vector<bool>>();
    r.fds = std::move((*message)->fds);
    if (r.fds.empty()) return std::nullopt;
    return r;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

void clone_session(const JoinerPlan& joiner, Request& r) {
  SessionPlan plan;
  plan.report_fd = r.fds[0].get();
  size_t next = 1;
  const bool tty = r.spec.request.tty;
  if (tty && next < r.fds.size()) plan.tty_slave = r.fds[next++].get();
  for (size_t i = 0; i < 3 && i < r.stdio_given.size() && !tty; ++i) {
    if (r.stdio_given[i] && next < r.fds.size()) plan.stdio[i] = r.fds[next++].get();
  }
  plan.cwd = r.spec.request.cwd;
  plan.readonly_mount = r.spec.readonly_mount;
  plan.credentials = joiner.credentials;
  plan.credentials.identity = r.spec.request.identity;
  fill_exec_vectors(r.spec, &plan);
  pid_t pid = linux::sys::clone_process(CLONE_PARENT | SIGCHLD);
  if (pid == 0) run_session(plan);
  if (pid < 0) {
    linux::sys::send_report(plan.report_fd, static_cast<int32_t>(Step::kCloneSession), errno);
  } else {
    linux::sys::send_report(plan.report_fd, static_cast<int32_t>(Step::kSessionPid), 0, pid);
  }
}  // the joiner's copies of the session's fds close here: its report pipe ends at the session's exec

[[noreturn]] void run_joiner(const JoinerPlan& plan) {
  int report = plan.report_fd;
  auto die = [report](Step step) {
    linux::sys::send_report(report, static_cast<int32_t>(step), errno == 0 ? EIO : errno);
    _exit(1);
  };
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  prctl(PR_SET_DUMPABLE, 0);  // a copy of the caller's memory, inside the sandbox's namespaces
  prctl(PR_SET_NAME, "tnk-joiner");
  // 0-2 stay (the supervisor's /dev/null and log): fds received later must not take those numbers,
  // which a session's stdio setup overwrites.
  std::vector<int> keep = {0, 1, 2};
  keep.insert(keep.end(), plan.ns_fds.begin(), plan.ns_fds.end());
  if (plan.credentials.root_session_userns >= 0) keep.push_back(plan.credentials.root_session_userns);
  keep.insert(keep.end(), plan.cgroup_procs_fds.begin(), plan.cgroup_procs_fds.end());
  keep.push_back(plan.channel);
  keep.push_back(report);
  close_all_but(keep);
  if (linux::join_cgroups(plan.cgroup_procs_fds) != 0)
    die(Step::kSessionCgroup);  // as host root, before leaving its userns
  if (setns(plan.ns_fds[kUserNs], CLONE_NEWUSER) != 0) die(Step::kSessionSetns);
  if (setgroups(0, nullptr) != 0 || setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0) die(Step::kSessionSetIds);
  for (size_t i = kMntNs; i < plan.ns_fds.size(); ++i) {
    if (setns(plan.ns_fds[i], ns_clone_flag(static_cast<NsIndex>(i))) != 0) die(Step::kSessionSetns);
  }
  for (int fd : plan.ns_fds) close(fd);
  for (int fd : plan.cgroup_procs_fds) close(fd);
  int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0 || !session::send_message(plan.channel, {{"root", true}}, std::span<const int>(&root, 1)).ok()) {
    die(Step::kSessionSetns);
  }
  close(root);
  close(report);  // joined: the caller's read of the report pipe ends
  while (auto request = receive_request(plan.channel)) clone_session(plan, *request);
  _exit(0);  // the caller closed the channel
}

Error session_error(Step step, int err, const SessionSpec& spec, pid_t init_pid) {
  const std::vector<std::string>& argv = spec.request.argv;
  const std::string program = argv.empty() ? "" : argv[0];
  switch (step) {
    case Step::kExec:
      if (err == ENOENT) return not_found("sandbox: no such program: " + program);
      return failed("sandbox: cannot execute " + program + ": " + std::strerror(err));
    case Step::kChdir:
      return failed("sandbox: cannot change to directory " + spec.request.cwd + ": " + std::strerror(err));
    case Step::kSessionCgroup: return sys_error(err, "joining the sandbox's cgroups");
    case Step::kSessionSetns:
    case Step::kSessionSetIds:
      return sys_error(err, "joining the namespaces of the sandbox's PID 1 (pid " + std::to_string(init_pid) + ")");
    case Step::kCloneSession: return sys_error(err, "creating the session process in the sandbox");
    case Step::kCapabilities: return sys_error(err, "sandbox: dropping capabilities");
    case Step::kRootNamespace: return sys_error(err, "sandbox: making the root session's user namespace");
    case Step::kReadonlyView:
      return sys_error(err, "sandbox: making " + spec.readonly_mount + " read-only for the provisioning session");
    default: break;
  }
  return sys_error(err, "sandbox: starting the session (step " + std::to_string(static_cast<int>(step)) + ")");
}

// The session's pid from the helper's reports, or the error; a session that failed is reaped here.
Result<pid_t> session_outcome(const std::vector<linux::sys::Report>& reports, Status read, const SessionSpec& spec,
                              pid_t init_pid) {
  pid_t pid = 0;
  const linux::sys::Report* failure = nullptr;
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
    linux::sys::wait_for(pid);  // it exits right after reporting
  }
  if (!read.ok()) return std::move(read).error();
  return session_error(static_cast<Step>(failure->step), failure->err, spec, init_pid);
}

}  // namespace

Result<Joiner> Joiner::start(const Sandbox& sandbox) {
  const pid_t init_pid = sandbox.init_pid;
  // The namespaces outlive PID 1 through their fds, but nothing can start in a pid namespace whose
  // init is gone.
  if (kill(init_pid, 0) != 0 && errno == ESRCH) {
    return not_found("the sandbox's PID 1 (pid " + std::to_string(init_pid) + ") is not running");
  }
  TNK_ASSIGN_OR_RETURN(auto cgroups, open_cgroup_procs(init_pid));
  TNK_ASSIGN_OR_RETURN(int last_cap, read_last_cap());
  // The filter is the same for every session: compiled once per process, not per exec.
  static const Result<std::vector<sock_filter>> compiled = build_seccomp_filter();
  if (!compiled) return compiled.error();
  static const std::vector<sock_filter> setid_filter = confine::setid_mode_filter();
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return sys_error(errno, "socketpair");
  UniqueFd channel(pair[0]), far_end(pair[1]);
  TNK_ASSIGN_OR_RETURN(auto pipe, make_pipe());
  JoinerPlan plan;
  for (size_t i = 0; i < kNsCount; ++i) plan.ns_fds[i] = sandbox.namespaces.fds[i].get();
  for (const auto& fd : cgroups) plan.cgroup_procs_fds.push_back(fd.get());
  plan.channel = far_end.get();
  plan.report_fd = pipe.write_end.get();
  plan.credentials = CredentialPlan{session::Identity::kAgent, last_cap, &*compiled, &setid_filter,
                                    sandbox.namespaces.root_session_user.get()};
  pid_t pid = fork();
  if (pid < 0) return sys_error(errno, "forking the sandbox's joiner");
  if (pid == 0) run_joiner(plan);
  far_end.reset();
  pipe.write_end.reset();
  std::vector<linux::sys::Report> reports;
  Status read = linux::sys::read_reports(pipe.read_end.get(), kSpawnTimeout, &reports);
  Joiner joiner(init_pid, pid, std::move(channel));
  if (!read.ok()) return std::move(read).error();
  if (!reports.empty()) {
    return session_error(static_cast<Step>(reports.front().step), reports.front().err, SessionSpec{}, init_pid);
  }
  TNK_ASSIGN_OR_RETURN(auto root, session::recv_message(joiner.channel_.get()));
  if (!root || (*root).fds.size() != 1) return failed("the sandbox's joiner did not send the sandbox's root");
  joiner.root_ = std::move((*root).fds.front());
  return joiner;
}

Result<Session> Joiner::spawn(const SessionSpec& spec) {
  const session::ExecRequest& request = spec.request;
  if (request.argv.empty() || request.argv[0].empty()) return usage_error("sandbox: no program to run");
  if (request.cwd.empty() || request.cwd[0] != '/') {
    return usage_error("sandbox: the working directory must be absolute");
  }
  Session session;
  UniqueFd slave;
  if (request.tty) {
    TNK_ASSIGN_OR_RETURN(auto pty, open_pty(root_.get(), spec));
    session.pty_master = std::move(pty.first);
    slave = std::move(pty.second);
  }
  TNK_ASSIGN_OR_RETURN(auto pipe, make_pipe());
  std::vector<int> fds = {pipe.write_end.get()};
  std::vector<bool> stdio_given;
  if (request.tty) {
    fds.push_back(slave.get());
  } else {
    for (int fd : {spec.stdin_fd, spec.stdout_fd, spec.stderr_fd}) {
      stdio_given.push_back(fd >= 0);
      if (fd >= 0) fds.push_back(fd);
    }
  }
  nlohmann::json message = session::to_json(request);
  message["readonly_mount"] = spec.readonly_mount;
  message["stdio"] = stdio_given;
  Status sent = session::send_message(channel_.get(), message, fds);
  if (!sent.ok()) return sent.error().context("the sandbox's joiner (pid " + std::to_string(pid_) + ") is gone");
  pipe.write_end.reset();
  slave.reset();
  std::vector<linux::sys::Report> reports;
  Status read = linux::sys::read_reports(pipe.read_end.get(), kSpawnTimeout, &reports);
  TNK_ASSIGN_OR_RETURN(session.pid, session_outcome(reports, std::move(read), spec, init_pid_));
  return session;
}

Joiner::Joiner(Joiner&& other) noexcept
    : init_pid_(other.init_pid_),
      pid_(std::exchange(other.pid_, 0)),
      channel_(std::move(other.channel_)),
      root_(std::move(other.root_)) {}

Joiner& Joiner::operator=(Joiner&& other) noexcept {
  if (this != &other) {
    end();
    init_pid_ = other.init_pid_;
    pid_ = std::exchange(other.pid_, 0);
    channel_ = std::move(other.channel_);
    root_ = std::move(other.root_);
  }
  return *this;
}

Joiner::~Joiner() { end(); }

void Joiner::end() {
  channel_.reset();
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    linux::sys::wait_for(pid_);
  }
  pid_ = 0;
}

Result<Session> spawn(const Sandbox& sandbox, const SessionSpec& spec) {
  TNK_ASSIGN_OR_RETURN(Joiner joiner, Joiner::start(sandbox));
  return joiner.spawn(spec);
}

}  // namespace tnk::ns
