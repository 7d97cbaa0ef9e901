// The byte pump shared by the forwarder and the proxy: copies both ways between two connected
// sockets without holding whole bodies (one bounded buffer per direction), and passes each end of
// stream on with shutdown(SHUT_WR) so that half-closed protocols keep working.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace tnk::net {

struct RelayStats {
  uint64_t bytes_up = 0;    // delivered to the upstream, including `first_up`
  uint64_t bytes_down = 0;  // delivered to the client
  std::string end;          // "closed", "idle timeout", "stopped", or "error: <what>"
};

// Given each chunk read from the client, how many of its bytes go upstream; fewer than all ends the
// client's direction there, without passing the end of stream on (the upstream still owes its answer,
// and some servers cancel a request whose client half-closes). An error ends the relay.
using UpstreamBound = std::function<Result<std::size_t>(std::string_view)>;

// Sees each run of bytes once it was delivered to the client (the answer's bytes, in order).
using DownstreamTap = std::function<void(std::string_view)>;

// Rewrites the answer on its way to the client: given each run of bytes read from the upstream (after
// `down_bound`) and, once the upstream has ended, `end` with no bytes, what to pass on now. It may hold
// bytes back for later runs. An error ends the relay (nothing more is passed).
using DownstreamFilter = std::function<Result<std::string>(std::string_view, bool end)>;

// Runs until both directions have ended, an error, `idle` without traffic (zero: no limit), or until
// `stop_fd` is readable. `first_up` is sent to the upstream before anything read from the client.
// `bound` (empty: none) limits what of the client's stream goes upstream, `down_bound` what of the
// answer goes back (fewer than all ends the relay there); `filter` (empty: none) rewrites it; `tap`
// (empty: none) watches what comes back, as delivered.
// Both sockets must be nonblocking; the caller closes them.
RelayStats relay(int client, int upstream, std::chrono::milliseconds idle, int stop_fd, std::string first_up = {},
                 const UpstreamBound& bound = {}, const DownstreamTap& tap = {}, const UpstreamBound& down_bound = {},
                 const DownstreamFilter& filter = {});

}  // namespace tnk::net
