// A forwarder: every connection accepted on a listener is relayed to one fixed host:port. Two kinds use
// this: a port forward (serve_forward: raw TCP, listens on the host's loopback and opens one port inside
// the sandbox) and the inference forwarder (serve_inference_forward in net/inference_forwarder.h: HTTP,
// listens inside the sandbox's network namespace and opens exactly the endpoint on the host).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
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

inline constexpr std::size_t kForwardMaxConnections = 256;  // port forwards; more are closed at once
inline constexpr int kForwardConnectTimeoutSeconds = 10;    // resolve + connect; then the client is closed

// What the connection threads of one forwarder share: the target and the sink, whose calls they
// serialize.
class ForwardEvents {
 public:
  ForwardEvents(const ForwardTarget& target, const NetEventSink& sink) : target_(target), sink_(sink) {}

  const ForwardTarget& target() const { return target_; }
  // An event about the target to fill in: allowed (by the target's rule) or refused (by none).
  NetEvent event(bool allowed) const;
  void report(const NetEvent& event);
  // `event` with the reason the target could not be reached (nothing when the forwarder is stopping).
  void report_unreachable(NetEvent event, const Error& error);

 private:
  const ForwardTarget& target_;
  const NetEventSink& sink_;
  std::mutex mu_;
};

// Opens the target (its own dial, else resolve and connect) as a nonblocking socket with TCP_NODELAY;
// `address` is what was connected to.
Result<UniqueFd> open_forward_target(const ForwardTarget& target, Clock::time_point deadline, int stop_fd,
                                     std::string* address);

// A usage error for a target without host or port.
Status check_forward_target(const ForwardTarget& target);

// A port forward. Serves until `stop_fd` becomes readable (forever when -1): accepts on `listener_fd`
// (made nonblocking), connects to `target`, and relays bytes both ways with half-close, whatever the
// protocol. There is no idle timeout: a dev server's websocket may stay quiet for hours. Each connection
// is one event when it ends (allowed, with bytes and how it ended, or why the target could not be
// reached). Returns when every connection thread has ended; fails only for an invalid target or a
// broken listener.
Status serve_forward(int listener_fd, const ForwardTarget& target, int stop_fd = -1, const NetEventSink& on_event = {});

}  // namespace tnk::net
