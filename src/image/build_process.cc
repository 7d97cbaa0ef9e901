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

#include "core/subprocess.h"
#include "core/unique_fd.h"

namespace tnk::image {
namespace {

constexpr auto kTermGrace = std::chrono::seconds(20);

// In the child, before exec: async-signal-safe calls only. Returns 0 or the errno that failed.
int child_setup(int devnull, int out, const StreamOptions& options) {
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

// Reads until EOF and the child's exit, or the deadline. Returns the wait status, or nullopt on timeout.
std::optional<int> pump(pid_t pid, int fd, LineSplitter& lines, std::chrono::steady_clock::time_point deadline) {
  std::array<char, 16384> buf;
  bool open = true;
  std::optional<int> status;
  // Once the child has exited, a grandchild that kept the pipe open must not hold us forever.
  std::optional<std::chrono::steady_clock::time_point> drain_until;
  while (open || !status) {
    auto now = std::chrono::steady_clock::now();
    if (!status && now >= deadline) return std::nullopt;
    if (drain_until && now >= *drain_until) break;
    if (open) {
      pollfd p{fd, POLLIN, 0};
      int n = ::poll(&p, 1, 200);
      if (n > 0) {
        ssize_t got = ::read(fd, buf.data(), buf.size());
        if (got > 0) lines.add(buf.data(), static_cast<size_t>(got));
        if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) open = false;
      }
    } else {
      ::usleep(20000);
    }
    if (!status) {
      int st = 0;
      if (::waitpid(pid, &st, WNOHANG) == pid) {
        status = st;
        drain_until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      }
    }
  }
  lines.finish();
  return status;
}

int terminate(pid_t pid) {
  ::kill(pid, SIGTERM);
  auto until = std::chrono::steady_clock::now() + kTermGrace;
  int status = 0;
  while (std::chrono::steady_clock::now() < until) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    ::usleep(50000);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return status;
}

}  // namespace

Result<int> run_streaming(const std::vector<std::string>& argv, const StreamOptions& options,
                          const std::function<void(std::string_view)>& on_line) {
  UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull.valid()) return sys_error(errno, "cannot open /dev/null");
  TNK_ASSIGN_OR_RETURN(Pipe out, make_pipe());
  int in_fd = devnull.get(), out_fd = out.write_end.get();
  TNK_ASSIGN_OR_RETURN(pid_t pid,
                       start_process(argv, [in_fd, out_fd, &options] { return child_setup(in_fd, out_fd, options); }));
  out.write_end.reset();

  LineSplitter lines(on_line);
  auto status = pump(pid, out.read_end.get(), lines, std::chrono::steady_clock::now() + options.timeout);
  if (!status) {
    terminate(pid);
    lines.finish();
    return failed(argv[0] + " did not finish within " +
                  std::to_string(std::chrono::duration_cast<std::chrono::minutes>(options.timeout).count()) +
                  " minutes; stopped it");
  }
  return exit_code_from_wait_status(*status);
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
