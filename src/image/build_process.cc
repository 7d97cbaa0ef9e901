#include "image/build_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <optional>

#include "core/signal_scope.h"
#include "core/subprocess.h"
#include "core/unique_fd.h"

namespace tnk::image {
namespace {

constexpr auto kTermGrace = std::chrono::seconds(20);

// In the child, before exec: async-signal-safe calls only. Returns 0 or the errno that failed.
int child_setup(int devnull, int out, const StreamOptions& options) {
  // A process group of its own, so that what it forks (mmdebstrap's workers, apt, dpkg, tar) can be
  // ended with it: killed alone, mmdebstrap leaves them running for minutes, holding the build lock.
  if (::setpgid(0, 0) != 0) return errno;
  // The scope that catches tnk's signals ignores SIGPIPE, which exec would pass on.
  if (::signal(SIGPIPE, SIG_DFL) == SIG_ERR) return errno;
  if (options.private_mounts && ::unshare(CLONE_NEWNS) == 0) {
    // Without this, mounts would still propagate back into a shared parent namespace.
    ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
  }
  if (::dup2(devnull, STDIN_FILENO) < 0 || ::dup2(out, STDOUT_FILENO) < 0 || ::dup2(out, STDERR_FILENO) < 0 ||
      (options.inherit_fd >= 0 && ::fcntl(options.inherit_fd, F_SETFD, 0) != 0)) {
    return errno;
  }
  return 0;
}

// Splits what arrives into lines; a last line without newline is delivered at the end.
class LineSplitter {
 public:
  explicit LineSplitter(const std::function<void(std::string_view)>& on_line) : on_line_(on_line) {}
  void add(const char* data, size_t n) {
    buffer_.append(data, n);
    size_t start = 0;
    for (size_t nl; (nl = buffer_.find('\n', start)) != std::string::npos; start = nl + 1) {
      on_line_(std::string_view(buffer_).substr(start, nl - start));
    }
    buffer_.erase(0, start);
  }
  void finish() {
    if (!buffer_.empty()) on_line_(buffer_);
    buffer_.clear();
  }

 private:
  const std::function<void(std::string_view)>& on_line_;
  std::string buffer_;
};

// True once the child has ended, without reaping it: while it is a zombie its process group's id
// cannot be given to another process, so killing the group cannot hit a stranger.
bool has_ended(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

// Why pump() stopped before the child's end.
struct Cut {
  int signal = 0;  // a terminating signal tnk received, or 0 for the deadline
};

// Reads until EOF and the child's end (not reaped), the deadline, or a signal on `signals`. Returns nullopt
// when the child ended, or why it stopped first.
std::optional<Cut> pump(pid_t pid, int fd, LineSplitter& lines, std::chrono::steady_clock::time_point deadline,
                        SignalScope& signals) {
  std::array<char, 16384> buf;
  bool open = true, ended = false;
  // Once the child has ended, a process that kept the pipe open must not hold us forever.
  std::optional<std::chrono::steady_clock::time_point> drain_until;
  while (open || !ended) {
    auto now = std::chrono::steady_clock::now();
    if (!ended && now >= deadline) return Cut{};
    if (drain_until && now >= *drain_until) break;
    std::array<pollfd, 2> p{{{signals.fd(), POLLIN, 0}, {open ? fd : -1, POLLIN, 0}}};
    if (::poll(p.data(), p.size(), open ? 200 : 20) > 0) {
      if (auto caught = signals.take(); !caught.empty() && !ended) return Cut{caught.front()};
      if (p[1].revents != 0) {
        ssize_t got = ::read(fd, buf.data(), buf.size());
        if (got > 0) lines.add(buf.data(), static_cast<size_t>(got));
        if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) open = false;
      }
    }
    if (!ended && has_ended(pid)) {
      ended = true;
      ::kill(-pid, SIGKILL);  // what it forked and left running, if anything (nothing, after a whole build)
      drain_until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    }
  }
  lines.finish();
  return std::nullopt;
}

// Ends the child's whole process group: `first` (SIGTERM or SIGINT let mmdebstrap clean up), then SIGKILL
// once the child has ended or the grace period is over; reaps the child.
void end_group(pid_t pid, int first) {
  ::kill(-pid, first);
  auto until = std::chrono::steady_clock::now() + kTermGrace;
  while (std::chrono::steady_clock::now() < until && !has_ended(pid)) ::usleep(50000);
  ::kill(-pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

}  // namespace

Result<int> run_streaming(const std::vector<std::string>& argv, const StreamOptions& options,
                          const std::function<void(std::string_view)>& on_line) {
  UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull.valid()) return sys_error(errno, "cannot open /dev/null");
  TNK_ASSIGN_OR_RETURN(Pipe out, make_pipe());
  // In its own process group the child no longer gets the terminal's Ctrl-C: tnk passes it on.
  TNK_ASSIGN_OR_RETURN(std::unique_ptr<SignalScope> signals, SignalScope::install({SIGINT, SIGTERM, SIGHUP}));
  int in_fd = devnull.get(), out_fd = out.write_end.get();
  TNK_ASSIGN_OR_RETURN(pid_t pid,
                       start_process(argv, [in_fd, out_fd, &options] { return child_setup(in_fd, out_fd, options); }));
  out.write_end.reset();

  LineSplitter lines(on_line);
  auto cut = pump(pid, out.read_end.get(), lines, std::chrono::steady_clock::now() + options.timeout, *signals);
  if (!cut) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return exit_code_from_wait_status(status);
  }
  end_group(pid, cut->signal != 0 ? cut->signal : SIGTERM);
  lines.finish();
  if (cut->signal != 0) {
    return failed(argv[0] + " stopped: tnk got SIG" + sigabbrev_np(cut->signal) + " (" + sigdescr_np(cut->signal) +
                  ")");
  }
  return failed(argv[0] + " did not finish within " +
                std::to_string(std::chrono::duration_cast<std::chrono::minutes>(options.timeout).count()) +
                " minutes; stopped it");
}

std::optional<std::string> ProgressFilter::feed(std::string_view line) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, kPhases> kPhaseLines = {{
      {"I: running apt-get update", "updating package lists"},
      {"I: downloading packages", "downloading packages"},
      {"I: extracting archives", "unpacking essential packages"},
      {"I: installing essential packages", "installing essential packages"},
      {"I: installing remaining packages", "installing the other packages"},
      {"I: running --customize-hook", "customizing (user, sudo, /etc, workspace)"},
      {"I: cleaning package lists", "cleaning up"},
  }};
  for (size_t i = 0; i < kPhaseLines.size(); ++i) {
    const auto& [prefix, text] = kPhaseLines[i];
    if (!line.starts_with(prefix) || last_ == text) continue;
    last_ = text;
    phase_ = static_cast<int>(i) + 1;
    return std::string(text);
  }
  return std::nullopt;
}

}  // namespace tnk::image
