#include "core/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "core/unique_fd.h"

namespace tnk {
namespace {

// Reads both pipes until EOF or the deadline; returns false on timeout.
bool drain(int out_fd, int err_fd, std::string& out, std::string& err, std::chrono::steady_clock::time_point deadline) {
  std::vector<pollfd> fds;
  if (out_fd >= 0) fds.push_back({out_fd, POLLIN, 0});
  if (err_fd >= 0) fds.push_back({err_fd, POLLIN, 0});
  char buf[16384];
  while (!fds.empty()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0 ? false : true;
    for (size_t i = 0; i < fds.size();) {
      if (fds[i].revents == 0) {
        ++i;
        continue;
      }
      ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        fds.erase(fds.begin() + static_cast<long>(i));
        continue;
      }
      (fds[i].fd == out_fd ? out : err).append(buf, static_cast<size_t>(got));
      ++i;
    }
  }
  return true;
}

}  // namespace

int exit_code_from_wait_status(int status) {
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

Result<pid_t> start_process(const std::vector<std::string>& argv, const std::function<int()>& child_setup) {
  if (argv.empty()) return failed("start_process: empty argv");
  // Reports a failure to start from the child: the errno travels through a CLOEXEC pipe.
  TNK_ASSIGN_OR_RETURN(Pipe report, make_pipe());
  // Above the low numbers a setup hands the program (dup2 to 3, 4, ...), which would close it unseen.
  UniqueFd high_end(::fcntl(report.write_end.get(), F_DUPFD_CLOEXEC, kReportFdFloor));
  if (!high_end.valid()) return sys_error(errno, "cannot start " + argv[0]);
  report.write_end = std::move(high_end);
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return sys_error(errno, "cannot start " + argv[0]);
  if (pid == 0) {
    int e = child_setup();
    if (e == 0) {
      ::execvp(cargv[0], cargv.data());
      e = errno;
    }
    (void)!::write(report.write_end.get(), &e, sizeof e);
    ::_exit(127);
  }
  report.write_end.reset();
  int child_errno = 0;
  ssize_t got;
  do {
    got = ::read(report.read_end.get(), &child_errno, sizeof child_errno);
  } while (got < 0 && errno == EINTR);
  if (got == sizeof child_errno) {
    int status;
    ::waitpid(pid, &status, 0);
    return sys_error(child_errno, "cannot run " + argv[0]);
  }
  return pid;
}

Result<ProcessResult> run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  Pipe out_pipe, err_pipe;
  if (options.capture_stdout) {
    TNK_ASSIGN_OR_RETURN(out_pipe, make_pipe());
  }
  if (options.capture_stderr) {
    TNK_ASSIGN_OR_RETURN(err_pipe, make_pipe());
  }
  std::string cwd = options.cwd ? options.cwd->string() : std::string();
  int out = out_pipe.write_end.get(), err = err_pipe.write_end.get();
  TNK_ASSIGN_OR_RETURN(pid_t pid, start_process(argv, [out, err, &cwd] {
                         if (out >= 0) ::dup2(out, STDOUT_FILENO);
                         if (err >= 0) ::dup2(err, STDERR_FILENO);
                         return !cwd.empty() && ::chdir(cwd.c_str()) != 0 ? errno : 0;
                       }));
  out_pipe.write_end.reset();
  err_pipe.write_end.reset();

  ProcessResult result;
  auto deadline = std::chrono::steady_clock::now() + options.timeout;
  bool in_time = drain(out_pipe.read_end.get(), err_pipe.read_end.get(), result.out, result.err, deadline);
  int status = 0;
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno == EINTR) continue;
    if (w == 0 && in_time && std::chrono::steady_clock::now() < deadline) {
      ::usleep(5000);
      continue;
    }
    // Past the deadline: kill and reap, so nothing is left behind.
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return failed(argv[0] + " did not finish within " +
                  std::to_string(std::chrono::duration_cast<std::chrono::seconds>(options.timeout).count()) + " s");
  }
  result.exit_code = exit_code_from_wait_status(status);
  return result;
}

}  // namespace tnk
