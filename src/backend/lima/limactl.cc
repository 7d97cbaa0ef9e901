#include "backend/lima/limactl.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "core/unique_fd.h"

namespace tnk::lima {
namespace {

constexpr std::chrono::seconds kListTimeout{30};

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return exit_code_from_wait_status(status);
}

// While limactl owns the terminal, the keyboard's signals are for it: tnk ignores them, as
// system(3) does, and restores what it had afterwards.
class IgnoreTerminalSignals {
 public:
  IgnoreTerminalSignals() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGINT, &ignore, &old_int_);
    ::sigaction(SIGQUIT, &ignore, &old_quit_);
  }
  ~IgnoreTerminalSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGQUIT, &old_quit_, nullptr);
  }
  IgnoreTerminalSignals(const IgnoreTerminalSignals&) = delete;
  IgnoreTerminalSignals& operator=(const IgnoreTerminalSignals&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_quit_ {};
};

void pump(int out_fd, int err_fd, const OutputSink& sink) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_fds = 2;
  char buf[8192];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      sink(i + 1, std::string_view(buf, static_cast<size_t>(got)));
    }
  }
}

class SystemLimactl : public Limactl {
 public:
  Result<ProcessResult> capture(const Argv& argv, std::chrono::milliseconds timeout) override {
    ProcessOptions options;
    options.capture_stdout = true;
    options.capture_stderr = true;
    options.timeout = timeout;
    return run_process(argv, options);
  }

  Result<ProcessResult> visible(const Argv& argv, std::chrono::milliseconds timeout) override {
    ProcessOptions options;
    options.capture_stdout = true;
    options.timeout = timeout;
    return run_process(argv, options);
  }

  Result<int> interactive(const Argv& argv) override {
    TNK_ASSIGN_OR_RETURN(pid_t pid, start_process(argv, [] { return 0; }));
    IgnoreTerminalSignals ignore;
    return wait_for(pid);
  }

  Result<int> stream(const Argv& argv, const OutputSink& sink) override {
    TNK_ASSIGN_OR_RETURN(Pipe out, make_pipe());
    TNK_ASSIGN_OR_RETURN(Pipe err, make_pipe());
    UniqueFd null_in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!null_in.valid()) return sys_error(errno, "open /dev/null");
    int in_fd = null_in.get(), out_fd = out.write_end.get(), err_fd = err.write_end.get();
    TNK_ASSIGN_OR_RETURN(pid_t pid, start_process(argv, [in_fd, out_fd, err_fd] {
                           if (::dup2(in_fd, STDIN_FILENO) < 0 || ::dup2(out_fd, STDOUT_FILENO) < 0 ||
                               ::dup2(err_fd, STDERR_FILENO) < 0) {
                             return errno;
                           }
                           return 0;
                         }));
    out.write_end.reset();
    err.write_end.reset();
    pump(out.read_end.get(), err.read_end.get(), sink);
    return wait_for(pid);
  }
};

}  // namespace

std::unique_ptr<Limactl> system_limactl() { return std::make_unique<SystemLimactl>(); }

Result<std::vector<Instance>> list_instances(Limactl& limactl) {
  auto ran = limactl.capture(list_argv(), kListTimeout);
  const std::string hint = "check the Lima installation with `limactl list` (see `tnk doctor`)";
  if (!ran && ran.error().sys_errno == ENOENT) {
    return not_found("the lima backend needs limactl, which is not installed (or not on PATH)",
                     "install Lima (macOS: `brew install lima`), or use --backend ns or --backend vm");
  }
  if (!ran) return ran.error().context("listing Lima instances").with_hint(hint);
  if (ran->exit_code != 0) {
    return failed(
        "`limactl list --format json` failed (exit " + std::to_string(ran->exit_code) + "): " + tail_lines(ran->err, 4),
        hint);
  }
  return parse_instances(ran->out);
}

std::string tail_lines(const std::string& text, size_t max_lines) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
  }
  size_t first = lines.size() > max_lines ? lines.size() - max_lines : 0;
  std::string out;
  for (size_t i = first; i < lines.size(); ++i) out += (out.empty() ? "" : " | ") + lines[i];
  return out.empty() ? "(no output)" : out;
}

}  // namespace tnk::lima
