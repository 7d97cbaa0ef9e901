#include "core/signal_scope.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace tnk {
namespace {

// The write end of the current scope's pipe, -1 when none: the only state a handler can reach.
std::atomic<int> g_signal_pipe{-1};

extern "C" void on_signal(int sig) {
  int saved_errno = errno;
  int fd = g_signal_pipe.load();
  if (fd >= 0) {
    auto byte = static_cast<unsigned char>(sig);
    ssize_t n = ::write(fd, &byte, 1);  // a full pipe drops the byte: enough are queued already
    (void)n;
  }
  errno = saved_errno;
}

}  // namespace

Result<std::unique_ptr<SignalScope>> SignalScope::install(const std::vector<int>& signals) {
  std::unique_ptr<SignalScope> scope(new SignalScope());
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return sys_error(errno, "cannot create the signal pipe");
  scope->read_.reset(fds[0]);
  scope->write_.reset(fds[1]);
  int expected = -1;
  if (!g_signal_pipe.compare_exchange_strong(expected, fds[1])) {
    scope->write_.reset();  // not ours to clear in the destructor's order; harmless to close here
    scope->read_.reset();
    return failed("cannot catch signals in two places at once in one process");
  }
  struct sigaction action {};
  action.sa_handler = on_signal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int sig : signals) sigaddset(&action.sa_mask, sig);
  for (int sig : signals) {
    Saved saved{sig, {}};
    if (::sigaction(sig, &action, &saved.action) != 0) return sys_error(errno, "cannot install a signal handler");
    scope->saved_.push_back(saved);
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  Saved pipe_saved{SIGPIPE, {}};
  if (::sigaction(SIGPIPE, &ignore, &pipe_saved.action) != 0) return sys_error(errno, "cannot ignore SIGPIPE");
  scope->saved_.push_back(pipe_saved);
  return scope;
}

SignalScope::~SignalScope() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) ::sigaction(it->signal, &it->action, nullptr);
  if (write_.valid()) {
    int mine = write_.get();
    g_signal_pipe.compare_exchange_strong(mine, -1);
  }
}

std::vector<int> SignalScope::take() {
  std::vector<int> out;
  unsigned char buf[64];
  for (;;) {
    ssize_t n = ::read(read_.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) out.push_back(buf[i]);
  }
  return out;
}

}  // namespace tnk
