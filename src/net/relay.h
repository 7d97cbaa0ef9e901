// The byte pump shared by the forwarder and the proxy: copies both ways between two connected
// sockets without holding whole bodies (one bounded buffer per direction), and passes each end of
// stream on with shutdown(SHUT_WR) so that half-closed protocols keep working.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tnk::net {

struct RelayStats {
  uint64_t bytes_up = 0;    // delivered to the upstream, including `first_up`
  uint64_t bytes_down = 0;  // delivered to the client
  std::string end;          // "closed", "idle timeout", "stopped", or "error: <what>"
};

// Runs until both directions have ended, an error, `idle` without traffic (zero: no limit), or until
// `stop_fd` is readable. `first_up` is sent to the upstream before anything read from the client.
// Both sockets must be nonblocking; the caller closes them.
RelayStats relay(int client, int upstream, std::chrono::milliseconds idle, int stop_fd, std::string first_up = {});

}  // namespace tnk::net
