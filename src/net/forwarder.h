// The inference forwarder: every connection accepted on a listener inside the sandbox's network
// namespace is relayed to the configured inference endpoint on the host. It opens exactly that one
// host:port (typically a loopback service, which is the point) and nothing else.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/result.h"

namespace tnk::net {

struct ForwardTarget {
  std::string host;  // name or IP literal, resolved for each connection
  uint16_t port = 0;
};

inline constexpr std::size_t kForwardMaxConnections = 256;  // more are closed at once
inline constexpr int kForwardConnectTimeoutSeconds = 10;    // resolve + connect; then the client is closed

// Told why a connection could not be forwarded ("cannot resolve ...", "connecting to 127.0.0.1:
// Connection refused"). Calls are serialized; they come from connection threads.
using ForwardErrorSink = std::function<void(const Error&)>;

// Serves until `stop_fd` becomes readable (forever when -1): accepts on `listener_fd` (made
// nonblocking), connects to `target`, and relays bytes both ways with half-close. There is no idle
// timeout: a model may think for minutes before its first byte. Returns when every connection thread
// has ended; fails only for an invalid target or a broken listener. Runs in the host network namespace.
Status serve_forward(int listener_fd, const ForwardTarget& target, int stop_fd = -1,
                     const ForwardErrorSink& on_error = {});

}  // namespace tnk::net
