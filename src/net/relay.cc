#include "net/relay.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace tnk::net {
namespace {

constexpr size_t kBufferBytes = 32 * 1024;

// One direction: read from `from` when the buffer is empty, write to `to` while it is not.
struct Pump {
  int from;
  int to;
  std::string buffer;
  size_t sent = 0;
  bool eof = false;   // `from` has ended
  bool done = false;  // ... and the end was passed on to `to`
  bool cut = false;   // `from` ended at the bound: `to` is not shut down
  uint64_t moved = 0;
  const UpstreamBound* bound = nullptr;
  const DownstreamTap* tap = nullptr;
  const DownstreamFilter* filter = nullptr;
  std::string bound_error{};

  bool pending() const { return sent < buffer.size(); }
  short from_events() const { return !eof && !pending() ? POLLIN : 0; }
  short to_events() const { return pending() ? POLLOUT : 0; }
};

// Passes what was read (`p.buffer`), and at the end what the filter held, through the filter.
bool filter(Pump& p) {
  if (p.filter == nullptr || !*p.filter) return true;
  Result<std::string> now = (*p.filter)(p.buffer, false);
  if (now && p.eof) {
    Result<std::string> rest = (*p.filter)({}, true);
    if (rest) rest->insert(0, *now);
    now = std::move(rest);
  }
  if (!now) {
    p.bound_error = now.error().message;
    return false;
  }
  p.buffer = std::move(*now);
  return true;
}

// Reads what is available into an empty buffer; false on a socket error (errno set) or a refusal of
// the bound or the filter (`bound_error` set).
bool fill(Pump& p) {
  if (p.eof || p.pending()) return true;
  p.buffer.resize(kBufferBytes);
  p.sent = 0;
  ssize_t n = ::recv(p.from, p.buffer.data(), p.buffer.size(), 0);
  p.buffer.resize(n > 0 ? static_cast<size_t>(n) : 0);
  if (n == 0) p.eof = true;
  if (n > 0 && p.bound != nullptr && *p.bound) {
    Result<size_t> keep = (*p.bound)(p.buffer);
    if (!keep.ok()) {
      p.bound_error = keep.error().message;
      return false;
    }
    if (*keep < p.buffer.size()) {
      p.buffer.resize(*keep);
      p.eof = p.cut = true;
    }
  }
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  return filter(p);
}

// Writes what the socket takes, then passes the end of stream on once the buffer is empty.
bool flush(Pump& p) {
  while (p.pending()) {
    ssize_t n = ::send(p.to, p.buffer.data() + p.sent, p.buffer.size() - p.sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    if (p.tap != nullptr && *p.tap) (*p.tap)(std::string_view(p.buffer).substr(p.sent, static_cast<size_t>(n)));
    p.sent += static_cast<size_t>(n);
    p.moved += static_cast<uint64_t>(n);
  }
  if (p.eof && !p.done) {
    if (!p.cut) ::shutdown(p.to, SHUT_WR);
    p.done = true;
  }
  return true;
}

std::string fill_error(const Pump& p) {
  return "error: " + (p.bound_error.empty() ? std::string(std::strerror(errno)) : p.bound_error);
}

std::string socket_error(int fd) {
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err == 0) err = ECONNRESET;
  return std::string("error: ") + std::strerror(err);
}

// A socket nothing is wanted of just now (its reader waits for the other side's buffer to drain) is
// left out of the poll: its POLLHUP, once its peer has closed, would otherwise wake every round, and
// ending the relay on it would drop what is still unread in its receive queue.
pollfd watch(int fd, short events) { return {events != 0 ? fd : -1, events, 0}; }

// One poll round; returns the reason to stop, or an empty string to go on.
std::string step(Pump& up, Pump& down, int idle_ms, int stop_fd) {
  pollfd p[3] = {watch(up.from, static_cast<short>(up.from_events() | down.to_events())),
                 watch(up.to, static_cast<short>(down.from_events() | up.to_events())),
                 {stop_fd, POLLIN, 0}};
  int r = ::poll(p, 3, idle_ms);
  if (r < 0) return errno == EINTR ? "" : std::string("error: poll: ") + std::strerror(errno);
  if (r == 0) return "idle timeout";
  if ((p[2].revents & POLLIN) != 0) return "stopped";
  for (int i = 0; i < 2; ++i) {
    if ((p[i].revents & POLLERR) != 0) return socket_error(p[i].fd);
  }
  if (!fill(up)) return fill_error(up);
  if (!fill(down)) return fill_error(down);
  if (!flush(up) || !flush(down)) return std::string("error: ") + std::strerror(errno);
  return "";
}

}  // namespace

RelayStats relay(int client, int upstream, std::chrono::milliseconds idle, int stop_fd, std::string first_up,
                 const UpstreamBound& bound, const DownstreamTap& tap, const UpstreamBound& down_bound,
                 const DownstreamFilter& filter) {
  Pump up{client, upstream, std::move(first_up)};
  up.bound = &bound;
  Pump down{upstream, client, {}};
  down.tap = &tap;
  down.bound = &down_bound;
  down.filter = &filter;
  RelayStats stats;
  int idle_ms = idle.count() > 0 ? static_cast<int>(idle.count()) : -1;
  if (!flush(up)) stats.end = std::string("error: ") + std::strerror(errno);
  while (stats.end.empty()) {
    // Bounded, the relay is over once the answer is: what the client sends later is never passed.
    if (down.done && (up.done || (bound && !up.pending()) || down.cut)) {
      stats.end = "closed";
      break;
    }
    stats.end = step(up, down, idle_ms, stop_fd);
  }
  stats.bytes_up = up.moved;
  stats.bytes_down = down.moved;
  return stats;
}

}  // namespace tnk::net
