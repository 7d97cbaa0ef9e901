// A forwarder: every connection accepted on a listener is relayed to one fixed host:port. The inference
// forwarder listens inside the sandbox's network namespace and opens exactly the endpoint on the host
// (typically a loopback service, which is the point) and nothing else; a port forward listens on the
// host's loopback and opens one port inside the sandbox.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/result.h"
#include "core/unique_fd.h"
#include "net/net_event.h"
#include "net/socket_io.h"

namespace tnk::net {

struct ForwardTarget {
  std::string host;  // name or IP literal, resolved for each connection
  uint16_t port = 0;
  std::string rule = "inference endpoint";  // what the events say allowed the connection
  // Opens the connection instead of resolving `host` (which must then be an IP literal: the events name
  // it as the address): a port forward connects inside the sandbox this way. Returns a nonblocking socket.
  std::function<Result<UniqueFd>(Clock::time_point deadline, int stop_fd)> dial{};
};

inline constexpr std::size_t kForwardMaxConnections = 256;  // more are closed at once
inline constexpr int kForwardConnectTimeoutSeconds = 10;    // resolve + connect; then the client is closed

// Serves until `stop_fd` becomes readable (forever when -1): accepts on `listener_fd` (made
// nonblocking), connects to `target`, and relays bytes both ways with half-close. There is no idle
// timeout: a model may think for minutes before its first byte. Each connection is one event when it
// ends (allowed, with bytes and how it ended, or why the target could not be reached). Returns when
// every connection thread has ended; fails only for an invalid target or a broken listener.
Status serve_forward(int listener_fd, const ForwardTarget& target, int stop_fd = -1, const NetEventSink& on_event = {});

}  // namespace tnk::net
