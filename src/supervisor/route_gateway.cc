#include "supervisor/route_gateway.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "core/json_fields.h"
#include "net/answer_masker.h"
#include "net/forwarder.h"
#include "net/head_reader.h"
#include "net/http_request.h"
#include "net/net_event.h"
#include "net/proxy_session.h"
#include "net/relay.h"
#include "net/request_body.h"
#include "net/serve_loop.h"

namespace tnk::supervisor {
namespace {

constexpr std::chrono::milliseconds kRouteAnswerTimeout{5'000};  // to write a refusal
constexpr std::chrono::milliseconds kRouteLinger{2'000};         // to read what follows a refusal
constexpr std::chrono::seconds kRouteConnectTimeout{15};         // resolve, connect and TLS

class RouteExchange {
 public:
  RouteExchange(UniqueFd client, const std::vector<GatewayRoute>& routes, const RouteEventSink& sink,
                const RouteLimits& limits, int stop_fd)
      : client_(std::move(client)), routes_(routes), sink_(sink), limits_(limits), stop_fd_(stop_fd) {}

  void run();

 private:
  const GatewayRoute* find(const std::string& name) const {
    for (const GatewayRoute& route : routes_) {
      if (route.route.name == name) return &route;
    }
    return nullptr;
  }
  void pass(const GatewayRoute& route, net::RequestHead head, net::RequestBody& body, const std::string& rest);
  void refuse(int status, const std::string& reason);
  void report();

  UniqueFd client_;
  const std::vector<GatewayRoute>& routes_;
  const RouteEventSink& sink_;
  const RouteLimits& limits_;
  int stop_fd_;
  std::string buffered_;
  RouteEvent event_;
  net::Clock::time_point start_ = net::Clock::now();
};

void RouteExchange::run() {
  net::HeadOutcome read =
      net::read_request_head(client_.get(), buffered_, net::RequestForm::kOrigin, limits_.head_timeout, stop_fd_);
  if (read.status != 0) return refuse(read.status, read.reason);
  if (!read.head) return;
  start_ = net::Clock::now();
  net::RequestHead& head = *read.head;
  event_.method = head.method;
  auto target = net::split_route_target(head.path);
  if (!target) {
    event_.path = head.path.substr(0, head.path.find('?'));
    return refuse(403, head.method + " " + event_.path + ": not a route (routes are below /r/<name>/)");
  }
  event_.route = net::printable_ascii(target->name);
  event_.path = target->rest.substr(0, target->rest.find('?'));
  const GatewayRoute* route = find(target->name);
  if (route == nullptr) {
    return refuse(403, "no route named '" + event_.route + "' (the [[routes]] of tnk.toml)");
  }
  if (auto refusal = net::route_refusal(route->route, head.method, event_.path)) return refuse(403, *refusal);
  auto body = net::RequestBody::of(head);
  if (!body.ok()) return refuse(400, body.error().message);
  pass(*route, std::move(head), *body, target->rest);
}

// The head as the upstream gets it: the path below the route, Host naming the upstream, the route's
// header instead of any the client sent under that name, answers uncompressed (the AnswerMasker reads them).
net::RequestHead upstream_head(const net::CredentialRoute& route, net::RequestHead head, const std::string& rest) {
  std::string own = net::ascii_lower(route.header_name);
  std::erase_if(head.headers, [&](const auto& header) {
    std::string name = net::ascii_lower(header.first);
    return name == own || name == "accept-encoding";
  });
  head.headers.emplace_back(route.header_name, route.header_value);
  head.headers.emplace_back("Accept-Encoding", "identity");
  head.path = rest;
  head.host = route.host;
  head.port = route.port;
  return head;
}

void RouteExchange::pass(const GatewayRoute& route, net::RequestHead head, net::RequestBody& body,
                         const std::string& rest) {
  const net::CredentialRoute& r = route.route;
  event_.upstream = net::host_port_text(r.host, r.port);
  auto deadline = net::Clock::now() + kRouteConnectTimeout;
  std::string address;
  auto tcp = net::open_forward_target({r.host, r.port, "route " + r.name}, deadline, stop_fd_, &address);
  Result<TlsUpstream> tls = tcp ? TlsUpstream::connect(route.tls.get(), std::move(*tcp), r.host, deadline, stop_fd_)
                                : Result<TlsUpstream>(tcp.error());
  if (!tls) {
    if (tls.error().sys_errno == ECANCELED) return;
    return refuse(502, "the route '" + r.name + "' cannot reach " + event_.upstream + ": " + tls.error().message);
  }
  std::string after_head = buffered_.substr(head.head_bytes);
  auto first_up = net::first_request_bytes(upstream_head(r, std::move(head), rest), after_head, body);
  if (!first_up.ok()) return refuse(400, first_up.error().message);
  int pair[2], done[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) != 0) {
    return refuse(502, std::string("the gateway cannot pass the request: ") + std::strerror(errno));
  }
  UniqueFd near(pair[0]), far(pair[1]);
  if (::pipe2(done, O_CLOEXEC | O_NONBLOCK) != 0) {
    return refuse(502, std::string("the gateway cannot pass the request: ") + std::strerror(errno));
  }
  UniqueFd done_read(done[0]), done_write(done[1]);
  event_.allowed = true;
  net::AnswerMasker masker(r.secrets);
  PumpResult pumped;
  std::thread upstream([&] {
    pumped = tls->pump(far.get(), masker, limits_.idle_timeout, stop_fd_, done_read.get());
    far.reset();
  });
  net::UpstreamBound bound = [&body](std::string_view data) { return body.take(data); };
  net::set_nodelay(client_.get());
  net::RelayStats stats =
      net::relay(client_.get(), near.get(), limits_.idle_timeout, stop_fd_, std::move(*first_up), bound);
  (void)::write(done_write.get(), "x", 1);
  upstream.join();
  event_.status = pumped.status;
  event_.bytes_up = stats.bytes_up;
  event_.bytes_down = stats.bytes_down;
  event_.reason = pumped.end.starts_with("error") ? pumped.end : stats.end;
  report();
}

void RouteExchange::refuse(int status, const std::string& reason) {
  event_.allowed = false;
  event_.status = status;
  event_.reason = reason;
  report();
  std::string line = "tnk: " + reason + (status == 403 ? " (docs/inference.md, \"Credential routes\")" : "");
  if (net::send_all(client_.get(), net::proxy_answer(status, line), net::Clock::now() + kRouteAnswerTimeout,
                    stop_fd_)) {
    net::linger_before_close(client_.get(), kRouteLinger, stop_fd_);
  }
}

void RouteExchange::report() {
  event_.latency_ms = std::chrono::duration_cast<std::chrono::milliseconds>(net::Clock::now() - start_).count();
  if (sink_) sink_(event_);
}

}  // namespace

// Each text field cut so that the line stays under PIPE_BUF (one atomic write); the route's name and
// the method are ASCII already (RouteExchange::run), the path and the reason are cut as NetEvent's are.
nlohmann::json to_json(const RouteEvent& event) {
  return {{"event", "route_request"},
          {"route", event.route.substr(0, 64)},
          {"method", event.method.substr(0, 32)},
          {"path", net::cut_event_text(event.path)},
          {"upstream", event.upstream},
          {"allowed", event.allowed},
          {"status", event.status},
          {"reason", net::cut_event_text(event.reason)},
          {"bytes_up", event.bytes_up},
          {"bytes_down", event.bytes_down},
          {"latency_ms", event.latency_ms}};
}

// Lenient, like net_event_from_json: a field of the wrong type reads as absent (nothing above catches).
RouteEvent route_event_from_json(const nlohmann::json& json) {
  JsonFields fields(json, "a route event");
  auto text = [&fields](const char* key) {
    auto value = fields.optional_string(key);
    return value ? *value : std::string();
  };
  auto count = [&fields](const char* key) {
    auto value = fields.optional_integer(key, 0, 0, LLONG_MAX);
    return value ? *value : 0;
  };
  RouteEvent event;
  event.route = text("route");
  event.method = text("method");
  event.path = text("path");
  event.upstream = text("upstream");
  event.reason = text("reason");
  auto allowed = fields.optional_boolean("allowed", false);
  event.allowed = allowed && *allowed;
  event.status = static_cast<int>(std::min<long long>(count("status"), 999));
  event.bytes_up = static_cast<uint64_t>(count("bytes_up"));
  event.bytes_down = static_cast<uint64_t>(count("bytes_down"));
  event.latency_ms = count("latency_ms");
  return event;
}

Result<std::vector<GatewayRoute>> prepare_routes(const std::vector<net::CredentialRoute>& routes) {
  std::vector<GatewayRoute> prepared;
  for (const net::CredentialRoute& route : routes) {
    auto tls = tls_client_context(route.ca_file);
    if (!tls) return tls.error().context("the route '" + route.name + "'");
    prepared.push_back({route, std::move(*tls)});
  }
  return prepared;
}

Status serve_routes(int listener_fd, const std::vector<GatewayRoute>& routes, int stop_fd,
                    const RouteEventSink& on_event, const RouteLimits& limits) {
  std::mutex mu;
  RouteEventSink serialized = [&](const RouteEvent& event) {
    std::lock_guard lock(mu);
    if (on_event) on_event(event);
  };
  net::ConnectionHandler handle = [&](UniqueFd client, int inner_stop) {
    RouteExchange(std::move(client), routes, serialized, limits, inner_stop).run();
  };
  net::OverflowHandler overflow = [](int) {};
  return net::serve_connections(listener_fd, stop_fd, limits.max_connections, handle, overflow,
                                "the route gateway's listener");
}

}  // namespace tnk::supervisor
