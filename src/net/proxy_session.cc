#include "net/proxy_session.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <optional>

#include "net/address_check.h"
#include "net/dial.h"
#include "net/domain_match.h"
#include "net/head_reader.h"
#include "net/http_request.h"
#include "net/relay.h"
#include "net/socket_io.h"

namespace tnk::net {
namespace {

constexpr std::chrono::milliseconds kAnswerTimeout{5'000};  // to write a refusal or the 200
constexpr std::chrono::milliseconds kLinger{2'000};         // to read what follows a refusal

const char* status_text(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 408: return "Request Timeout";
    case 431: return "Request Header Fields Too Large";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Error";
  }
}

class Session {
 public:
  Session(UniqueFd client, ProxyShared& shared, int stop_fd)
      : client_(std::move(client)), shared_(shared), limits_(shared.config.limits), stop_fd_(stop_fd) {}

  void run() {
    std::optional<RequestHead> head = read_head();
    if (!head) return;
    if (head->host == kProxyHealthHost) return answer_health();
    event_.host = head->host;
    event_.port = head->port;
    if (!check_allow_list(*head)) return;
    UniqueFd upstream = open_upstream(*head);
    if (upstream.valid()) pass_through(*head, std::move(upstream));
  }

 private:
  std::optional<RequestHead> read_head();
  bool check_allow_list(const RequestHead& head);
  bool check_open_port(const RequestHead& head);
  void answer_health();
  UniqueFd open_upstream(const RequestHead& head);
  void pass_through(const RequestHead& head, UniqueFd upstream);
  void fail_upstream(const Error& error, const RequestHead& head);
  void refuse(int status, const std::string& line, std::string reason);

  UniqueFd client_;
  ProxyShared& shared_;
  const ProxyLimits& limits_;
  int stop_fd_;
  std::string buffered_;
  NetEvent event_;
};

// The head, or nullopt once the connection is over (a malformed or late head answered here).
std::optional<RequestHead> Session::read_head() {
  HeadOutcome read = read_request_head(client_.get(), buffered_, RequestForm::kProxy, limits_.head_timeout, stop_fd_);
  if (read.status != 0) refuse(read.status, "tnk: " + read.reason, read.reason);
  return std::move(read.head);
}

// `open` lets every name through, on 80, 443 and the profile's network.open_ports only.
bool Session::check_open_port(const RequestHead& head) {
  const std::vector<uint16_t>& extra = shared_.config.open_ports;
  if (std::ranges::find(kOpenPorts, head.port) != std::end(kOpenPorts) ||
      std::ranges::find(extra, head.port) != extra.end()) {
    event_.rule = "open";
    return true;
  }
  std::string ports;
  for (uint16_t port : kOpenPorts) ports += std::to_string(port) + ", ";
  for (uint16_t port : extra) ports += std::to_string(port) + ", ";
  refuse(403,
         "tnk: port " + std::to_string(head.port) + " is not open to this sandbox (open: " +
             ports.substr(0, ports.size() - 2) + "; a profile adds ports with network.open_ports)",
         "port not open");
  return false;
}

bool Session::check_allow_list(const RequestHead& head) {
  if (shared_.config.allow_any) return check_open_port(head);
  if (domain_allowed(shared_.config.allow, head.host, head.port, &event_.rule)) return true;
  bool port_only = host_listed(shared_.config.allow, head.host);
  std::string who = port_only ? host_port_text(head.host, head.port) : head.host;
  std::string list = shared_.config.list_name.empty() ? "" : " (" + shared_.config.list_name + ")";
  refuse(403, "tnk: " + who + " is not in this sandbox's allow-list" + list,
         port_only ? "port not in allow-list" : "not in allow-list");
  return false;
}

void Session::answer_health() {
  std::string answer = proxy_answer(200, "tnk proxy: ok");
  if (send_all(client_.get(), answer, Clock::now() + kAnswerTimeout, stop_fd_)) {
    linger_before_close(client_.get(), kLinger, stop_fd_);
  }
}

// Resolves, refuses when any address is host-internal, then connects to a checked address.
UniqueFd Session::open_upstream(const RequestHead& head) {
  auto deadline = Clock::now() + limits_.connect_timeout;
  auto endpoints = resolve_tcp(head.host, head.port, deadline, stop_fd_);
  if (!endpoints.ok()) {
    event_.allowed = true;
    fail_upstream(endpoints.error(), head);
    return {};
  }
  for (const Endpoint& endpoint : *endpoints) {
    if (auto kind = shared_.address_check(endpoint.address)) {
      event_.address = address_to_string(endpoint.address);
      refuse(403, "tnk: " + head.host + " resolves to " + event_.address + ", a host-internal address (" + *kind + ")",
             "host-internal address (" + *kind + ")");
      return {};
    }
  }
  event_.allowed = true;
  auto connected = connect_any(*endpoints, deadline, stop_fd_);
  if (!connected.ok()) {
    fail_upstream(connected.error(), head);
    return {};
  }
  event_.address = address_to_string(connected->second.address);
  return std::move(connected->first);
}

void Session::fail_upstream(const Error& error, const RequestHead& head) {
  std::string where = host_port_text(head.host, head.port);
  if (error.sys_errno == ECANCELED) {
    event_.reason = "stopped";
    shared_.report(event_);
  } else if (error.sys_errno == ETIMEDOUT) {
    refuse(504, "tnk: " + where + " did not answer within " + duration_text(limits_.connect_timeout), error.message);
  } else {
    refuse(502, "tnk: " + where + ": " + error.message, error.message);
  }
}

void Session::pass_through(const RequestHead& head, UniqueFd upstream) {
  std::string first_up = head.is_connect ? std::string() : origin_form_head(head);
  first_up += buffered_.substr(head.head_bytes);
  set_nodelay(client_.get());
  set_nodelay(upstream.get());
  static constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
  if (head.is_connect && !send_all(client_.get(), kEstablished, Clock::now() + kAnswerTimeout, stop_fd_)) {
    event_.reason = "error: the client left before the tunnel opened";
    shared_.report(event_);
    return;
  }
  RelayStats stats = relay(client_.get(), upstream.get(), limits_.idle_timeout, stop_fd_, std::move(first_up));
  event_.bytes_up = stats.bytes_up;
  event_.bytes_down = stats.bytes_down;
  event_.reason = stats.end;
  shared_.report(event_);
}

// Answers `status` with a one-line body, reports the event, and ends the connection gently.
void Session::refuse(int status, const std::string& line, std::string reason) {
  event_.reason = std::move(reason);
  shared_.report(event_);
  if (send_all(client_.get(), proxy_answer(status, line), Clock::now() + kAnswerTimeout, stop_fd_)) {
    linger_before_close(client_.get(), kLinger, stop_fd_);
  }
}

}  // namespace

void ProxyShared::report(const NetEvent& event) {
  if (!config.on_event) return;
  std::lock_guard<std::mutex> lock(event_mu);
  config.on_event(event);
}

void serve_proxy_connection(UniqueFd client, ProxyShared& shared, int stop_fd) {
  Session(std::move(client), shared, stop_fd).run();
}

std::string proxy_answer(int status, const std::string& body_line) {
  std::string body = body_line + "\n";
  return "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) +
         "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

std::string duration_text(std::chrono::milliseconds duration) {
  if (duration.count() % 1000 == 0) return std::to_string(duration.count() / 1000) + " s";
  return std::to_string(duration.count()) + " ms";
}

}  // namespace tnk::net
