#include "net/serve_loop.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "net/socket_io.h"

namespace tnk::net {
namespace {

// Counts live connection threads so that serve_connections can wait for the last one.
class ThreadCount {
 public:
  bool try_add(std::size_t limit) {
    std::lock_guard<std::mutex> lock(mu_);
    if (active_ >= limit) return false;
    ++active_;
    return true;
  }
  // Notifies under the lock: once the waiter sees zero, no thread touches this object again.
  void remove() {
    std::lock_guard<std::mutex> lock(mu_);
    --active_;
    idle_.notify_all();
  }
  void wait_for_zero() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [this] { return active_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable idle_;
  std::size_t active_ = 0;
};

// A handler that throws (bad_alloc) loses its connection, never the process (UniqueFd closed it); the
// loss is written to the relay's stderr (supervisor.log), since it may have cost a decision's record.
void run_connection(const ConnectionHandler& handle, ThreadCount& count, int fd, int stop_fd) {
  try {
    handle(UniqueFd(fd), stop_fd);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tnk: a connection was dropped: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "tnk: a connection was dropped: unknown exception\n");
  }
  count.remove();
}

void start_connection(const ConnectionHandler& handle, ThreadCount& count, int fd, int stop_fd) {
  try {
    std::thread(run_connection, std::cref(handle), std::ref(count), fd, stop_fd).detach();
  } catch (...) {
    ::close(fd);
    count.remove();
  }
}

bool transient_accept_error(int err) {
  return err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED || err == EPROTO || err == EPERM ||
         err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

// Accepts until stopped; returns an error only for a broken listener.
Status accept_loop(int listener_fd, int stop_fd, int inner_stop, std::size_t max_connections,
                   const ConnectionHandler& handle, const OverflowHandler& overflow, ThreadCount& count,
                   const char* what) {
  for (;;) {
    Ready r = wait_ready(listener_fd, POLLIN, kNoDeadline, stop_fd);
    if (r == Ready::kStopped) return ok_status();
    if (r == Ready::kError) return sys_error(errno, std::string("waiting on ") + what);
    int fd = ::accept4(listener_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      int err = errno;
      if (!transient_accept_error(err)) return sys_error(err, std::string("accepting on ") + what);
      // Out of fds or memory: the connection stays queued, so pause instead of spinning.
      if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) ::usleep(50 * 1000);
      continue;
    }
    if (!count.try_add(max_connections)) {
      overflow(fd);
      ::close(fd);
      continue;
    }
    start_connection(handle, count, fd, inner_stop);
  }
}

}  // namespace

Status serve_connections(int listener_fd, int stop_fd, std::size_t max_connections, const ConnectionHandler& handle,
                         const OverflowHandler& overflow, const char* what) {
  if (!set_nonblocking(listener_fd)) return sys_error(errno, std::string("setting up ") + what);
  int stop_pipe[2];
  if (::pipe2(stop_pipe, O_CLOEXEC) != 0) return sys_error(errno, std::string("setting up ") + what + ": pipe");
  UniqueFd inner_read(stop_pipe[0]);
  UniqueFd inner_write(stop_pipe[1]);
  ThreadCount count;
  Status status = accept_loop(listener_fd, stop_fd, inner_read.get(), max_connections, handle, overflow, count, what);
  char byte = 's';
  while (::write(inner_write.get(), &byte, 1) < 0 && errno == EINTR) {
  }
  count.wait_for_zero();
  return status;
}

}  // namespace tnk::net
