#include "backend/ns/session.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "backend/ns/signals.h"
#include "backend/ns/steps.h"
#include "confine/readonly_view.h"
#include "linux/syscalls.h"

namespace tnk::ns {

namespace {

constexpr int kExitCannotExec = 126;
constexpr int kExitNotFound = 127;
constexpr int kFirstHighFd = 10;

[[noreturn]] void die(const SessionPlan& plan, Step step, int err) {
  linux::sys::send_report(plan.report_fd, static_cast<int32_t>(step), err == 0 ? EIO : err);
  _exit(step == Step::kExec && err == ENOENT ? kExitNotFound : kExitCannotExec);
}

// Puts the session's stdio on 0, 1, 2. Sources are first copied above 2 so that a source that is
// itself 0, 1 or 2 is not overwritten before it is used.
void setup_stdio(const SessionPlan& plan) {
  int sources[3];
  for (int i = 0; i < 3; ++i) {
    int src = plan.tty_slave >= 0 ? plan.tty_slave : plan.stdio[i];
    if (src < 0) {
      src = open("/dev/null", O_RDWR | O_CLOEXEC);
      if (src < 0) die(plan, Step::kStdio, errno);
    }
    sources[i] = fcntl(src, F_DUPFD_CLOEXEC, kFirstHighFd);
    if (sources[i] < 0) die(plan, Step::kStdio, errno);
  }
  for (int i = 0; i < 3; ++i) {
    if (dup2(sources[i], i) < 0) die(plan, Step::kStdio, errno);
  }
}

[[noreturn]] void exec_program(const SessionPlan& plan) {
  int err = ENOENT;
  bool denied = false;
  for (const auto& candidate : plan.candidates) {
    execve(candidate.c_str(), plan.argv.data(), plan.envp.data());
    if (errno == ENOEXEC) {
      // A script without #!: run it with /bin/sh, as execvpe does.
      auto sh_argv = plan.sh_argv;  // malloc after fork is fine here: the caller is single-threaded
      sh_argv[1] = const_cast<char*>(candidate.c_str());
      execve("/bin/sh", sh_argv.data(), plan.envp.data());
    }
    if (errno == EACCES) {
      denied = true;
    } else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE && errno != ENODEV && errno != ETIMEDOUT) {
      err = errno;
      break;
    }
  }
  die(plan, Step::kExec, denied && err == ENOENT ? EACCES : err);
}

}  // namespace

std::vector<std::string> exec_candidates(const std::string& argv0, const std::vector<std::string>& env) {
  if (argv0.find('/') != std::string::npos) return {argv0};
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& kv : env) {
    if (kv.rfind("PATH=", 0) == 0) path = kv.substr(5);
  }
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t end = path.find(':', start);
    std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    out.push_back(dir.empty() ? argv0 : dir + "/" + argv0);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

void fill_exec_vectors(const SessionSpec& spec, SessionPlan* plan) {
  const session::ExecRequest& request = spec.request;
  plan->argv.clear();
  plan->envp.clear();
  plan->sh_argv.clear();
  for (const auto& a : request.argv) plan->argv.push_back(const_cast<char*>(a.c_str()));
  plan->argv.push_back(nullptr);
  for (const auto& e : request.env) plan->envp.push_back(const_cast<char*>(e.c_str()));
  plan->envp.push_back(nullptr);
  static char kSh[] = "/bin/sh";
  plan->sh_argv.push_back(kSh);
  plan->sh_argv.push_back(nullptr);  // the candidate, filled in at exec time
  for (size_t i = 1; i < request.argv.size(); ++i) plan->sh_argv.push_back(const_cast<char*>(request.argv[i].c_str()));
  plan->sh_argv.push_back(nullptr);
  plan->candidates = request.argv.empty() ? std::vector<std::string>{} : exec_candidates(request.argv[0], request.env);
}

[[noreturn]] void run_session(const SessionPlan& plan) {
  if (!reset_signals()) die(plan, Step::kSessionSignals, errno);
  if (setsid() < 0) die(plan, Step::kSetsid, errno);
  if (plan.tty_slave >= 0 && ioctl(plan.tty_slave, TIOCSCTTY, 0) != 0) die(plan, Step::kControllingTty, errno);
  // The slave belongs to whoever opened it (the caller); give it to the session's user, group tty, as a
  // login does. Still mapped root here, in the sandbox's own ids.
  if (plan.tty_slave >= 0) {
    uid_t owner = plan.credentials.identity == session::Identity::kRoot ? 0 : kAgentId;
    if (fchown(plan.tty_slave, owner, kTtyGid) != 0 || fchmod(plan.tty_slave, 0620) != 0) {
      die(plan, Step::kControllingTty, errno);
    }
  }
  setup_stdio(plan);
  // Whatever the caller left without CLOEXEC must not reach the program.
  close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
  // Still mapped root: the session's own mount namespace, in which the seccomp filter loaded next
  // refuses any remount.
  if (!plan.readonly_mount.empty() && confine::make_readonly_view(plan.readonly_mount.c_str()) != 0) {
    die(plan, Step::kReadonlyView, errno);
  }
  StepError e = apply_rlimits();
  if (e.ok()) e = apply_identity(plan.credentials);
  if (!e.ok()) die(plan, e.step, e.err);
  // After the identity change, so that the directory is checked with the session's own permissions.
  if (chdir(plan.cwd.c_str()) != 0) die(plan, Step::kChdir, errno);
  exec_program(plan);
}

}  // namespace tnk::ns
