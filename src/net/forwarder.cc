#include "net/forwarder.h"

#include <cerrno>
#include <chrono>
#include <mutex>

#include "net/address_check.h"
#include "net/dial.h"
#include "net/relay.h"
#include "net/serve_loop.h"

namespace tnk::net {
namespace {

struct Forwarding {
  const ForwardTarget& target;
  const NetEventSink& on_event;
  std::mutex report_mu;

  void report(const NetEvent& event) {
    if (!on_event) return;
    std::lock_guard<std::mutex> lock(report_mu);
    on_event(event);
  }
  void report(NetEvent event, const Error& error) {
    if (error.sys_errno == ECANCELED) return;  // the forwarder is stopping
    event.reason = error.context("forwarding to " + target.host + ":" + std::to_string(target.port)).message;
    report(event);
  }
};

// The target's own dial, else resolve and connect; `address` is what was connected to.
Result<UniqueFd> open_target(const ForwardTarget& target, Clock::time_point deadline, int stop_fd,
                             std::string* address) {
  if (target.dial) {
    TNK_ASSIGN_OR_RETURN(UniqueFd fd, target.dial(deadline, stop_fd));
    *address = target.host;
    return fd;
  }
  TNK_ASSIGN_OR_RETURN(std::vector<Endpoint> endpoints, resolve_tcp(target.host, target.port, deadline, stop_fd));
  TNK_ASSIGN_OR_RETURN(auto upstream, connect_any(endpoints, deadline, stop_fd));
  *address = address_to_string(upstream.second.address);
  return std::move(upstream.first);
}

void forward_one(UniqueFd client, Forwarding& forwarding, int stop_fd) {
  const ForwardTarget& target = forwarding.target;
  NetEvent event;
  event.allowed = true;
  event.host = target.host;
  event.port = target.port;
  event.rule = target.rule;
  auto deadline = Clock::now() + std::chrono::seconds(kForwardConnectTimeoutSeconds);
  auto upstream = open_target(target, deadline, stop_fd, &event.address);
  if (!upstream.ok()) return forwarding.report(event, upstream.error());
  set_nodelay(client.get());
  set_nodelay(upstream->get());
  RelayStats stats = relay(client.get(), upstream->get(), std::chrono::milliseconds(0), stop_fd);
  event.bytes_up = stats.bytes_up;
  event.bytes_down = stats.bytes_down;
  event.reason = stats.end;
  forwarding.report(event);
}

}  // namespace

Status serve_forward(int listener_fd, const ForwardTarget& target, int stop_fd, const NetEventSink& on_event) {
  if (target.host.empty() || target.port == 0) {
    return usage_error("invalid inference forward target \"" + target.host + ":" + std::to_string(target.port) + "\"",
                       "set inference_url to http://host:port");
  }
  Forwarding forwarding{target, on_event, {}};
  ConnectionHandler handle = [&forwarding](UniqueFd client, int inner_stop) {
    forward_one(std::move(client), forwarding, inner_stop);
  };
  OverflowHandler overflow = [](int) {};
  return serve_connections(listener_fd, stop_fd, kForwardMaxConnections, handle, overflow,
                           "the inference forwarder's listener");
}

}  // namespace tnk::net
