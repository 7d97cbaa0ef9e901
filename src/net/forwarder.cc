#include "net/forwarder.h"

#include <cerrno>
#include <chrono>

#include "net/address_check.h"
#include "net/dial.h"
#include "net/relay.h"
#include "net/serve_loop.h"

namespace tnk::net {

NetEvent ForwardEvents::event(bool allowed) const {
  NetEvent event;
  event.allowed = allowed;
  event.host = target_.host;
  event.port = target_.port;
  if (allowed) event.rule = target_.rule;  // a refusal matched no rule
  return event;
}

void ForwardEvents::report(const NetEvent& event) {
  if (!sink_) return;
  std::lock_guard<std::mutex> lock(mu_);
  sink_(event);
}

void ForwardEvents::report_unreachable(NetEvent event, const Error& error) {
  if (error.sys_errno == ECANCELED) return;  // the forwarder is stopping
  event.reason = error.context("forwarding to " + target_.host + ":" + std::to_string(target_.port)).message;
  report(event);
}

Result<UniqueFd> open_forward_target(const ForwardTarget& target, Clock::time_point deadline, int stop_fd,
                                     std::string* address) {
  UniqueFd fd;
  if (target.dial) {
    TNK_ASSIGN_OR_RETURN(fd, target.dial(deadline, stop_fd));
    *address = target.host;
  } else {
    TNK_ASSIGN_OR_RETURN(std::vector<Endpoint> endpoints, resolve_tcp(target.host, target.port, deadline, stop_fd));
    TNK_ASSIGN_OR_RETURN(auto upstream, connect_any(endpoints, deadline, stop_fd));
    *address = address_to_string(upstream.second.address);
    fd = std::move(upstream.first);
  }
  set_nodelay(fd.get());
  return fd;
}

Status check_forward_target(const ForwardTarget& target) {
  if (!target.host.empty() && target.port != 0) return ok_status();
  return usage_error("invalid forward target \"" + target.host + ":" + std::to_string(target.port) + "\"",
                     "set inference_url to http://host:port");
}

namespace {

void forward_one(UniqueFd client, ForwardEvents& events, int stop_fd) {
  NetEvent event = events.event(true);
  auto deadline = Clock::now() + std::chrono::seconds(kForwardConnectTimeoutSeconds);
  auto upstream = open_forward_target(events.target(), deadline, stop_fd, &event.address);
  if (!upstream.ok()) return events.report_unreachable(event, upstream.error());
  set_nodelay(client.get());
  RelayStats stats = relay(client.get(), upstream->get(), std::chrono::milliseconds(0), stop_fd);
  event.bytes_up = stats.bytes_up;
  event.bytes_down = stats.bytes_down;
  event.reason = stats.end;
  events.report(event);
}

}  // namespace

Status serve_forward(int listener_fd, const ForwardTarget& target, int stop_fd, const NetEventSink& on_event) {
  TNK_RETURN_IF_ERROR(check_forward_target(target));
  ForwardEvents events(target, on_event);
  ConnectionHandler handle = [&events](UniqueFd client, int inner_stop) {
    forward_one(std::move(client), events, inner_stop);
  };
  OverflowHandler overflow = [](int) {};
  return serve_connections(listener_fd, stop_fd, kForwardMaxConnections, handle, overflow,
                           "the port forwarder's listener");
}

}  // namespace tnk::net
