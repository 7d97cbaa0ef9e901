#include "net/socket_io.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>

namespace tnk::net {

int poll_timeout_ms(Clock::time_point deadline) {
  if (deadline == kNoDeadline) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
}

Ready wait_ready(int fd, short events, Clock::time_point deadline, int stop_fd) {
  for (;;) {
    pollfd p[2] = {{fd, events, 0}, {stop_fd, POLLIN, 0}};
    int r = ::poll(p, 2, poll_timeout_ms(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Ready::kError;
    if ((p[1].revents & POLLIN) != 0) return Ready::kStopped;
    if (p[0].revents != 0) return Ready::kYes;
    if (r == 0 || Clock::now() >= deadline) return Ready::kTimeout;
  }
}

Received receive_more(int fd, std::string& buffered, std::size_t chunk, Clock::time_point deadline, int stop_fd) {
  switch (wait_ready(fd, POLLIN, deadline, stop_fd)) {
    case Ready::kYes: break;
    case Ready::kTimeout: return Received::kTimeout;
    case Ready::kStopped: return Received::kStopped;
    case Ready::kError: return Received::kError;
  }
  std::size_t before = buffered.size();
  buffered.resize(before + chunk);
  ssize_t n = ::recv(fd, buffered.data() + before, chunk, 0);
  int err = errno;
  buffered.resize(before + (n > 0 ? static_cast<std::size_t>(n) : 0));
  if (n > 0) return Received::kMore;
  if (n == 0) return Received::kClosed;
  errno = err;
  return err == EAGAIN || err == EWOULDBLOCK || err == EINTR ? Received::kNothingYet : Received::kError;
}

bool send_all(int fd, std::string_view data, Clock::time_point deadline, int stop_fd) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    if (wait_ready(fd, POLLOUT, deadline, stop_fd) != Ready::kYes) return false;
  }
  return true;
}

void linger_before_close(int fd, std::chrono::milliseconds at_most, int stop_fd) {
  ::shutdown(fd, SHUT_WR);
  auto deadline = Clock::now() + at_most;
  size_t dropped = 0;
  char buf[4096];
  while (dropped < 64 * 1024 && wait_ready(fd, POLLIN, deadline, stop_fd) == Ready::kYes) {
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return;
    dropped += static_cast<size_t>(n);
  }
}

void drain_queued_input(int fd) {
  char buf[4096];
  for (int i = 0; i < 16; ++i) {
    if (::recv(fd, buf, sizeof buf, MSG_DONTWAIT) <= 0) return;
  }
}

bool set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

void set_nodelay(int fd) {
  int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace tnk::net
