#include "supervisor/launch.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "core/files.h"
#include "core/program_path.h"
#include "core/random_token.h"
#include "core/unique_fd.h"
#include "linux/cgroups.h"
#include "state/layout.h"

namespace tnk::supervisor {
namespace {

constexpr const char* kSupervisorPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

Result<UniqueFd> config_memfd(const SupervisorConfig& config) {
  UniqueFd fd(::memfd_create("tnk-supervisor-config", MFD_CLOEXEC));
  if (!fd.valid()) return sys_error(errno, "memfd_create");
  TNK_RETURN_IF_ERROR(write_all(fd.get(), to_json(config).dump(), "writing the supervisor config"));
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) return sys_error(errno, "lseek");
  return fd;
}

// What the launcher's grandchild executes: tnk in its supervisor mode, or, on a host whose cgroups systemd
// manages, systemd-run running it in a delegated scope of its own (then `scoped`, which the supervisor is
// told as config.cgroup_scope). Decided here, once per start. Built before fork.
struct SupervisorExec {
  std::string path;
  std::vector<std::string> argv;
  std::vector<std::string> env = {"PATH=" + std::string(kSupervisorPath), "LC_ALL=C.UTF-8"};
  UniqueFd self;  // set with a scope: tnk's binary, handed on as kSelfFd
  bool scoped = false;
};

Result<SupervisorExec> supervisor_exec(const SupervisorConfig& config) {
  SupervisorExec exec;
  exec.path = "/proc/self/exe";
  exec.argv = {"tnk", kSuperviseArg, config.id};
  TNK_ASSIGN_OR_RETURN(linux::CgroupHost host, linux::detect_cgroup_host());
  std::optional<linux::SystemdFacts> facts = linux::supervisor_scope(host);
  if (!facts) return exec;
  std::string systemd_run = find_on_path("systemd-run", kSupervisorPath);
  if (systemd_run.empty()) {
    return failed("cannot start the supervisor in a systemd scope of its own: systemd-run is not installed",
                  "run `tnk doctor`");
  }
  // Above the numbers the grandchild dup2()s onto, so that none of those overwrites it first.
  UniqueFd self(::open("/proc/self/exe", O_PATH | O_CLOEXEC));
  if (self.valid()) exec.self.reset(::fcntl(self.get(), F_DUPFD_CLOEXEC, kSelfFd + 1));
  if (!exec.self.valid()) return sys_error(errno, "opening tnk's own binary");
  TNK_ASSIGN_OR_RETURN(std::string token, random_token());
  exec.path = systemd_run;
  exec.argv = linux::scope_command(*facts, systemd_run, config.id + "-" + token.substr(0, 8),
                                   {"/proc/self/fd/" + std::to_string(kSelfFd), kSuperviseArg, config.id});
  for (auto& e : linux::scope_environment(*facts)) exec.env.push_back(std::move(e));
  exec.scoped = true;
  return exec;
}

std::vector<const char*> c_strings(const std::vector<std::string>& words) {
  std::vector<const char*> out;
  for (const auto& w : words) out.push_back(w.c_str());
  out.push_back(nullptr);
  return out;
}

// In the forked child: only async-signal-safe calls until execve. The grandchild becomes the
// supervisor so that it is nobody's child but init's once this command line exits.
[[noreturn]] void exec_supervisor(const char* path, const char* const* argv, const char* const* envp, int self_fd,
                                  int config_fd, int ready_fd, int log_fd) {
  if (::setsid() < 0) ::_exit(120);
  pid_t grandchild = ::fork();
  if (grandchild != 0) ::_exit(grandchild < 0 ? 121 : 0);
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0 || ::dup2(null_fd, 0) < 0 || ::dup2(log_fd, 1) < 0 || ::dup2(log_fd, 2) < 0 ||
      ::dup2(config_fd, kConfigFd) < 0 || ::dup2(ready_fd, kReadyFd) < 0 ||
      (self_fd >= 0 && ::dup2(self_fd, kSelfFd) < 0)) {
    ::_exit(122);
  }
  ::execve(path, const_cast<char* const*>(argv), const_cast<char* const*>(envp));
  ::_exit(123);
}

// Reads the ready line. Stops at its newline, not at EOF: processes the supervisor forked hold
// the pipe too.
Result<std::string> read_ready(int fd, std::chrono::milliseconds timeout) {
  std::string text;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return failed("the supervisor did not report ready within " + std::to_string(timeout.count() / 1000) + " s");
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error(errno, "waiting for the supervisor");
    if (n == 0) continue;
    char buf[4096];
    ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return sys_error(errno, "reading from the supervisor");
    if (got == 0) return text;
    text.append(buf, static_cast<size_t>(got));
    if (text.find('\n') != std::string::npos) return text;
  }
}

std::string log_tail(const std::filesystem::path& log) {
  auto text = read_file(log);
  if (!text || text->empty()) return {};
  std::string tail = text->size() > 1500 ? text->substr(text->size() - 1500) : *text;
  while (!tail.empty() && tail.back() == '\n') tail.pop_back();
  return tail;
}

Result<Launched> parse_ready(const std::string& text, const std::filesystem::path& log) {
  nlohmann::json answer = nlohmann::json::parse(text, nullptr, false);
  if (answer.is_discarded() || !answer.is_object()) {
    std::string tail = log_tail(log);
    return failed("the sandbox supervisor exited before it was ready" + (tail.empty() ? "" : ":\n" + tail),
                  "see " + log.string());
  }
  if (!answer.value("ok", false)) {
    // The kind crosses as its exit code, so that a refusal inside the supervisor is still exit 77.
    Error e = failed(answer.value("message", std::string("the sandbox did not start")), answer.value("hint", ""));
    for (ErrorKind kind : {ErrorKind::kUsage, ErrorKind::kNotFound, ErrorKind::kPermission}) {
      if (answer.value("exit_code", kExitFailed) == exit_code_for(kind)) e.kind = kind;
    }
    return e;
  }
  Launched launched;
  launched.pid = answer.value("pid", 0);
  for (const auto& note : answer.value("notes", nlohmann::json::array())) launched.notes.push_back(note);
  return launched;
}

}  // namespace

Result<Launched> launch_supervisor(const SupervisorConfig& config, std::chrono::milliseconds timeout) {
  auto log_path = config.state_dir / state::kSupervisorLog;
  UniqueFd log_fd(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!log_fd.valid()) return sys_error(errno, "opening " + log_path.string());
  TNK_ASSIGN_OR_RETURN(SupervisorExec exec, supervisor_exec(config));
  SupervisorConfig told = config;
  told.cgroup_scope = exec.scoped;
  TNK_ASSIGN_OR_RETURN(UniqueFd config_fd, config_memfd(told));
  TNK_ASSIGN_OR_RETURN(Pipe ready, make_pipe());
  std::vector<const char*> argv = c_strings(exec.argv);
  std::vector<const char*> envp = c_strings(exec.env);
  pid_t child = ::fork();
  if (child < 0) return sys_error(errno, "fork");
  if (child == 0) {
    exec_supervisor(exec.path.c_str(), argv.data(), envp.data(), exec.self.valid() ? exec.self.get() : -1,
                    config_fd.get(), ready.write_end.get(), log_fd.get());
  }
  ready.write_end.reset();
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return failed("could not start the sandbox supervisor");
  TNK_ASSIGN_OR_RETURN(std::string text, read_ready(ready.read_end.get(), timeout));
  return parse_ready(text, log_path);
}

}  // namespace tnk::supervisor
