// Socket waiting and writing with deadlines for the relays: every wait also watches a stop fd, so a
// relay thread never outlives a stop request by more than one poll wakeup.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace tnk::net {

using Clock = std::chrono::steady_clock;
inline constexpr Clock::time_point kNoDeadline = Clock::time_point::max();

enum class Ready { kYes, kTimeout, kStopped, kError };

// Waits until `fd` reports `events` (or HUP/ERR), the deadline passes, or `stop_fd` (-1: none) is readable.
Ready wait_ready(int fd, short events, Clock::time_point deadline, int stop_fd);

// What receive_more saw: bytes appended (kMore), none yet (EAGAIN, EINTR: ask again), or why no more
// will come; after kError, errno says what failed.
enum class Received { kMore, kNothingYet, kTimeout, kStopped, kClosed, kError };

// Waits as wait_ready does for input on `fd`, then appends at most `chunk` bytes of it to `buffered`.
// The one read loop of the proxy's and the forwarder's head and hello readers.
Received receive_more(int fd, std::string& buffered, std::size_t chunk, Clock::time_point deadline, int stop_fd);

// Milliseconds left until `deadline` for poll(): -1 for kNoDeadline, at least 0.
int poll_timeout_ms(Clock::time_point deadline);

// Sends all of `data` on a (nonblocking) socket before `deadline`; false on error, timeout or stop.
bool send_all(int fd, std::string_view data, Clock::time_point deadline, int stop_fd);

// Ends a connection after a refusal without losing the answer: shut down our side, read and drop what
// the client still sends for a moment (closing with unread input would reset the connection and could
// discard the answer before the client reads it). The caller closes the fd.
void linger_before_close(int fd, std::chrono::milliseconds at_most, int stop_fd);

// The same, without waiting: drop whatever input is already queued (for the accept thread).
void drain_queued_input(int fd);

bool set_nonblocking(int fd);
void set_nodelay(int fd);

}  // namespace tnk::net
