#include "net/forwarder.h"

#include <cerrno>
#include <chrono>
#include <mutex>

#include "net/dial.h"
#include "net/relay.h"
#include "net/serve_loop.h"

namespace tnk::net {
namespace {

struct Forwarding {
  const ForwardTarget& target;
  const ForwardErrorSink& on_error;
  std::mutex report_mu;

  void report(const Error& error) {
    if (!on_error || error.sys_errno == ECANCELED) return;
    std::lock_guard<std::mutex> lock(report_mu);
    on_error(error.context("forwarding to the inference endpoint " + target.host + ":" + std::to_string(target.port)));
  }
};

void forward_one(UniqueFd client, Forwarding& forwarding, int stop_fd) {
  const ForwardTarget& target = forwarding.target;
  auto deadline = Clock::now() + std::chrono::seconds(kForwardConnectTimeoutSeconds);
  auto endpoints = resolve_tcp(target.host, target.port, deadline, stop_fd);
  if (!endpoints.ok()) return forwarding.report(endpoints.error());
  auto upstream = connect_any(*endpoints, deadline, stop_fd);
  if (!upstream.ok()) return forwarding.report(upstream.error());
  set_nodelay(client.get());
  set_nodelay(upstream->first.get());
  (void)relay(client.get(), upstream->first.get(), std::chrono::milliseconds(0), stop_fd);
}

}  // namespace

Status serve_forward(int listener_fd, const ForwardTarget& target, int stop_fd, const ForwardErrorSink& on_error) {
  if (target.host.empty() || target.port == 0) {
    return usage_error("invalid inference forward target \"" + target.host + ":" + std::to_string(target.port) + "\"",
                       "set inference_url to http://host:port");
  }
  Forwarding forwarding{target, on_error, {}};
  ConnectionHandler handle = [&forwarding](UniqueFd client, int inner_stop) {
    forward_one(std::move(client), forwarding, inner_stop);
  };
  OverflowHandler overflow = [](int) {};
  return serve_connections(listener_fd, stop_fd, kForwardMaxConnections, handle, overflow,
                           "the inference forwarder's listener");
}

}  // namespace tnk::net
