#include "core/log_drain.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace tnk {
namespace {

// Waits until `source` has something (or its end) or `stop` was written; true for the latter.
bool wait_for(int source, int stop) {
  pollfd fds[2] = {{source, POLLIN, 0}, {stop, POLLIN, 0}};
  while (::poll(fds, 2, -1) < 0 && errno == EINTR) {
  }
  return fds[1].revents != 0;
}

}  // namespace

Result<std::unique_ptr<LogDrain>> LogDrain::start(UniqueFd source, CappedLog log) {
  return launch(std::move(source), false, std::move(log));
}

Result<std::unique_ptr<LogDrain>> LogDrain::accept_one(UniqueFd listener, CappedLog log) {
  return launch(std::move(listener), true, std::move(log));
}

Result<std::unique_ptr<LogDrain>> LogDrain::launch(UniqueFd source, bool listening, CappedLog log) {
  UniqueFd stop(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop.valid()) return sys_error(errno, "eventfd");
  // Reads never wait: poll() says when there is something, and the last copy stops at "nothing now".
  int flags = ::fcntl(source.get(), F_GETFL);
  if (flags < 0 || ::fcntl(source.get(), F_SETFL, flags | O_NONBLOCK) != 0) return sys_error(errno, "fcntl");
  std::unique_ptr<LogDrain> drain(new LogDrain(std::move(source), listening, std::move(log), std::move(stop)));
  // The thread blocks every signal: a supervisor takes SIGCHLD and SIGTERM on a signalfd, which sees only
  // signals that no thread of the process could take instead.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  drain->thread_ = std::thread([raw = drain.get()] { raw->run(); });
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return drain;
}

LogDrain::~LogDrain() {
  uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

void LogDrain::run() {
  for (;;) {
    bool stopping = wait_for(source_.get(), stop_.get());
    if (listening_) {
      if (!accept_pending()) return;
      // A writer that connected before the stop is copied too (QEMU connects as it starts).
      if (listening_) {
        if (stopping) return;
        continue;
      }
    }
    if (!copy_available() || stopping) return;
  }
}

bool LogDrain::accept_pending() {
  UniqueFd connection(::accept4(source_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (!connection.valid()) return errno == EAGAIN || errno == EINTR || errno == ECONNABORTED;
  source_ = std::move(connection);  // one writer: the listener closes
  listening_ = false;
  return true;
}

// Bounded, so that a writer that never pauses cannot keep the destructor from ending the thread: what a
// pipe or a socket buffer holds is far less.
bool LogDrain::copy_available() {
  char buf[65536];
  for (int reads = 0; reads < 64; ++reads) {
    ssize_t n = ::read(source_.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    if (n <= 0) return false;
    // A failed write loses this piece only: the writer must never wait for the disk.
    (void)log_.append({buf, static_cast<size_t>(n)});
  }
  return true;
}

}  // namespace tnk
