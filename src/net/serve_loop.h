// The accept loop shared by the forwarder and the proxy: one thread per connection, at most
// `max_connections` at a time, and a stop that reaches every connection thread before serve returns.
#pragma once

#include <cstddef>
#include <functional>

#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::net {

// Runs on its own thread with a nonblocking connection; `stop_fd` becomes readable when serving ends.
using ConnectionHandler = std::function<void(UniqueFd connection, int stop_fd)>;
// Runs on the accept thread for a connection over the limit; must not block. The caller closes the fd.
using OverflowHandler = std::function<void(int connection)>;

// Accepts on `listener_fd` (made nonblocking) until `stop_fd` (-1: never) is readable, then signals the
// connection threads and waits for them. Fails only when the listener itself is unusable.
// `what` names the listener in errors ("the egress proxy listener").
Status serve_connections(int listener_fd, int stop_fd, std::size_t max_connections, const ConnectionHandler& handle,
                         const OverflowHandler& overflow, const char* what);

}  // namespace tnk::net
