#include "net/proxy_session.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <optional>

#include "net/address_check.h"
#include "net/dial.h"
#include "net/head_reader.h"
#include "net/http_request.h"
#include "net/live_allow.h"
#include "net/proxy_credential.h"
#include "net/relay.h"
#include "net/request_body.h"
#include "net/socket_io.h"
#include "net/tls_sni.h"

namespace tnk::net {
namespace {

constexpr std::chrono::milliseconds kAnswerTimeout{5'000};  // to write a refusal or the 200
constexpr std::chrono::milliseconds kLinger{2'000};         // to read what follows a refusal
// How an allowed connection ended when a new policy no longer allowed it (`tnk sandbox deny`, an expiry).
constexpr const char* kCutReason = "cut: the policy no longer allows it";

const char* status_text(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 407: return "Proxy Authentication Required";
    case 401: return "Unauthorized";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Error";
  }
}

// "192.0.2.7", "127.1", "2001:db8::1": what the resolver takes as an address rather than a name.
bool is_ip_literal(const std::string& host) {
  in_addr v4;
  in6_addr v6;
  return ::inet_aton(host.c_str(), &v4) != 0 || ::inet_pton(AF_INET6, host.c_str(), &v6) == 1;
}

// How the first bytes of a CONNECT tunnel were judged: relayed, refused (net_deny), or the tunnel
// ended before they were complete (reported as the end of an allowed connection).
struct HelloCheck {
  enum class Verdict { kPass, kRefuse, kEnded } verdict = Verdict::kPass;
  std::string reason;
};

class Session {
 public:
  Session(UniqueFd client, ProxyShared& shared, int stop_fd)
      : client_(std::move(client)), shared_(shared), limits_(shared.config.limits), stop_fd_(stop_fd) {}
  ~Session() {
    if (ticket_ != 0) shared_.live.release(ticket_);  // before the descriptors close
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void run() {
    std::optional<RequestHead> head = read_head();
    if (!head) return;
    if (head->host == kProxyHealthHost) return answer_health();
    event_.host = head->host;
    event_.port = head->port;
    if (!shared_.config.credential.empty() && !carries_credential(*head, shared_.config.credential)) {
      return refuse(407, "tnk: this proxy serves only the process it was made for (a per-run credential)",
                    "no valid proxy credential");
    }
    if (!check_allow_list(*head)) return;
    if (head->is_connect) {
      if (open_upstream(*head)) tunnel(*head);
      return;
    }
    auto body = RequestBody::of(*head);
    if (!body.ok()) return refuse(400, "tnk: " + body.error().message, body.error().message);
    if (open_upstream(*head)) pass_request(*head, *body);
  }

 private:
  std::optional<RequestHead> read_head();
  bool check_allow_list(const RequestHead& head);
  void refuse_closed_port(const RequestHead& head);
  void answer_health();
  bool open_upstream(const RequestHead& head);
  void tunnel(const RequestHead& head);
  HelloCheck check_client_hello(const RequestHead& head);
  void pass_request(const RequestHead& head, RequestBody& body);
  void relay_and_report(int upstream, std::string first_up, const UpstreamBound& bound = {});
  void fail_upstream(const Error& error, const RequestHead& head);
  void refuse(int status, const std::string& line, std::string reason);

  UniqueFd client_;
  ProxyShared& shared_;
  const ProxyLimits& limits_;
  int stop_fd_;
  std::string buffered_;
  NetEvent event_;
  // The upstream stays open until the destructor released the ticket: a replacement of the lists
  // (LiveAllowList::replace) may shut it down until then, so it must not be a number reused meanwhile.
  UniqueFd upstream_;
  uint64_t ticket_ = 0;  // the allowed connection's registration in the lists in force
};

// The head, or nullopt once the connection is over (a malformed or late head answered here).
std::optional<RequestHead> Session::read_head() {
  HeadOutcome read = read_request_head(client_.get(), buffered_, RequestForm::kProxy, limits_.head_timeout, stop_fd_);
  if (read.status != 0) refuse(read.status, "tnk: " + read.reason, read.reason);
  return std::move(read.head);
}

// `open` lets every name through, on 80, 443 and the profile's network.open_ports only: the refusal of
// another port.
void Session::refuse_closed_port(const RequestHead& head) {
  std::string ports;
  for (uint16_t port : kOpenPorts) ports += std::to_string(port) + ", ";
  for (uint16_t port : shared_.config.open_ports) ports += std::to_string(port) + ", ";
  refuse(403,
         "tnk: port " + std::to_string(head.port) + " is not open to this sandbox (open: " +
             ports.substr(0, ports.size() - 2) + "; a profile adds ports with network.open_ports)",
         "port not open");
}

// Judged by the lists in force now (under `open`: every name on its open ports, less the denied); an
// allowed connection stays registered (ticket_) until it ends, so that a later list that refuses it cuts it.
bool Session::check_allow_list(const RequestHead& head) {
  LiveAllowList::Admission admission = shared_.live.admit(head.host, head.port, client_.get());
  if (admission.allowed) {
    event_.rule = admission.rule;
    ticket_ = admission.ticket;
    return true;
  }
  if (admission.denied) {
    refuse(403, "tnk: " + head.host + " is denied to this sandbox (tnk sandbox deny " + admission.rule + ")",
           "denied (" + admission.rule + ")");
    return false;
  }
  if (shared_.config.allow_any) {
    refuse_closed_port(head);
    return false;
  }
  std::string who = admission.port_only ? host_port_text(head.host, head.port) : head.host;
  std::string list = shared_.config.list_name.empty() ? "" : " (" + shared_.config.list_name + ")";
  refuse(403, "tnk: " + who + " is not in this sandbox's allow-list" + list,
         admission.port_only ? kPortNotInAllowList : kNotInAllowList);
  return false;
}

void Session::answer_health() {
  std::string answer = proxy_answer(200, "tnk proxy: ok");
  if (send_all(client_.get(), answer, Clock::now() + kAnswerTimeout, stop_fd_)) {
    linger_before_close(client_.get(), kLinger, stop_fd_);
  }
}

// Resolves, refuses when any address is host-internal, then connects (upstream_) to a checked address.
bool Session::open_upstream(const RequestHead& head) {
  auto deadline = Clock::now() + limits_.connect_timeout;
  auto endpoints = resolve_tcp(head.host, head.port, deadline, stop_fd_);
  if (!endpoints.ok()) {
    event_.allowed = true;
    fail_upstream(endpoints.error(), head);
    return false;
  }
  for (const Endpoint& endpoint : *endpoints) {
    if (auto kind = shared_.address_check(endpoint.address)) {
      event_.address = address_to_string(endpoint.address);
      refuse(403, "tnk: " + head.host + " resolves to " + event_.address + ", a host-internal address (" + *kind + ")",
             "host-internal address (" + *kind + ")");
      return false;
    }
  }
  event_.allowed = true;
  auto connected = connect_any(*endpoints, deadline, stop_fd_);
  if (!connected.ok()) {
    fail_upstream(connected.error(), head);
    return false;
  }
  event_.address = address_to_string(connected->second.address);
  upstream_ = std::move(connected->first);
  if (ticket_ != 0 && !shared_.live.attach(ticket_, upstream_.get())) {
    event_.reason = kCutReason;  // the policy changed while it connected
    shared_.report(event_);
    return false;
  }
  return true;
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

// A CONNECT tunnel: after the 200, the client's first bytes must be a TLS ClientHello for the CONNECT
// name before anything reaches the upstream (security review L3: an allowed name on a shared front end
// must not carry a handshake for another of its tenants).
void Session::tunnel(const RequestHead& head) {
  static constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
  if (!send_all(client_.get(), kEstablished, Clock::now() + kAnswerTimeout, stop_fd_)) {
    event_.reason = "error: the client left before the tunnel opened";
    shared_.report(event_);
    return;
  }
  HelloCheck hello = check_client_hello(head);
  if (hello.verdict != HelloCheck::Verdict::kPass) {
    // A refusal after the 200 can only close the tunnel: the client sees its end of stream.
    if (hello.verdict == HelloCheck::Verdict::kRefuse) event_.allowed = false;
    event_.reason = hello.reason;
    shared_.report(event_);
    return;
  }
  relay_and_report(upstream_.get(), buffered_.substr(head.head_bytes));
}

// Reads the tunnel's first bytes (at most kMaxClientHelloBytes, for at most the head timeout) until
// client_hello_sni judges them. Not checked: a CONNECT to an IP literal (the policy judged that
// address itself, whatever name a hello to it carries), and one to a port other than 80 and 443, the
// ports shared front ends route by name on; there the protocol may be anything (ssh, a database) and
// the server may speak first, so waiting for a hello would break it.
HelloCheck Session::check_client_hello(const RequestHead& head) {
  using Verdict = HelloCheck::Verdict;
  const std::vector<uint16_t>& checked = shared_.config.server_name_ports;
  if (is_ip_literal(head.host) || std::ranges::find(checked, head.port) == checked.end()) return {};
  auto deadline = Clock::now() + limits_.head_timeout;
  for (;;) {
    SniResult hello = client_hello_sni(std::string_view(buffered_).substr(head.head_bytes));
    switch (hello.status) {
      case SniStatus::kFound:
        if (hello.name == head.host || hello.name + "." == head.host) return {};  // "example.org." is that name
        return {Verdict::kRefuse, "TLS server name " + hello.name + " is not the CONNECT name"};
      case SniStatus::kNoSni: return {Verdict::kRefuse, "a TLS ClientHello without a server name"};
      case SniStatus::kNotTls: return {Verdict::kRefuse, "not TLS (a tunnel to a name carries TLS only)"};
      case SniStatus::kMalformed: return {Verdict::kRefuse, "malformed TLS ClientHello: " + hello.reason};
      case SniStatus::kNeedMore: break;
    }
    // The parser has a verdict by kMaxClientHelloBytes: what is read stays below that plus one chunk.
    switch (receive_more(client_.get(), buffered_, 4096, deadline, stop_fd_)) {
      case Received::kMore:
      case Received::kNothingYet: break;
      case Received::kTimeout:
        return {Verdict::kRefuse, "no TLS ClientHello within " + duration_text(limits_.head_timeout)};
      case Received::kStopped: return {Verdict::kEnded, "stopped"};
      case Received::kClosed: return {Verdict::kEnded, "closed"};
      case Received::kError: return {Verdict::kEnded, std::string("error: ") + std::strerror(errno)};
    }
  }
}

// Plain http: exactly one request (its head in origin form, with "Connection: close", and its body)
// goes upstream, then its answer comes back; a request pipelined behind it is never passed (security
// review L3: it could name another Host on the same server).
void Session::pass_request(const RequestHead& head, RequestBody& body) {
  auto first_up = first_request_bytes(head, std::string_view(buffered_).substr(head.head_bytes), body);
  if (!first_up.ok()) {
    event_.allowed = false;  // malformed body framing: a refusal, although the destination was allowed
    return refuse(400, "tnk: " + first_up.error().message, first_up.error().message);
  }
  UpstreamBound bound = [&body](std::string_view data) { return body.take(data); };
  relay_and_report(upstream_.get(), std::move(*first_up), bound);
}

void Session::relay_and_report(int upstream, std::string first_up, const UpstreamBound& bound) {
  set_nodelay(client_.get());
  set_nodelay(upstream);
  RelayStats stats = relay(client_.get(), upstream, limits_.idle_timeout, stop_fd_, std::move(first_up), bound);
  event_.bytes_up = stats.bytes_up;
  event_.bytes_down = stats.bytes_down;
  event_.reason = ticket_ != 0 && shared_.live.was_cut(ticket_) ? std::string(kCutReason) : stats.end;
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

std::string proxy_answer(int status, const std::string& body_line, const std::string& extra_headers) {
  std::string body = body_line + "\n";
  return "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) +
         "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
         extra_headers + "Connection: close\r\n\r\n" + body;
}

std::string duration_text(std::chrono::milliseconds duration) {
  if (duration.count() % 1000 == 0) return std::to_string(duration.count() / 1000) + " s";
  return std::to_string(duration.count()) + " ms";
}

}  // namespace tnk::net
