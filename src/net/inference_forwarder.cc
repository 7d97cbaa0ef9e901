#include "net/inference_forwarder.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/answer_masker.h"
#include "net/answer_meter.h"
#include "net/head_reader.h"
#include "net/http_request.h"
#include "net/inference_paths.h"
#include "net/proxy_session.h"
#include "net/relay.h"
#include "net/request_body.h"
#include "net/request_slots.h"
#include "net/serve_loop.h"

namespace tnk::net {
namespace {

constexpr std::chrono::milliseconds kAnswerTimeout{5'000};   // to write a refusal
constexpr std::chrono::milliseconds kLinger{2'000};          // to read what follows a refusal
constexpr std::size_t kMaxModelListBytes = 4 * 1024 * 1024;  // a /v1/models answer read whole for the aliases

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

bool expects_continue(const RequestHead& head) {
  for (const auto& [name, value] : head.headers) {
    if (ascii_lower(name) == "expect" && ascii_lower(value) == "100-continue") return true;
  }
  return false;
}

// What the gateway's connection threads share.
struct Gateway {
  ForwardEvents& events;
  const InferenceLimits& limits;
  const GatewaySettings& settings;
  RequestSlots slots;
};

class InferenceRequest {
 public:
  InferenceRequest(UniqueFd client, Gateway& gateway, int stop_fd)
      : client_(std::move(client)), gateway_(gateway), stop_fd_(stop_fd) {}

  void run();

 private:
  std::optional<RequestHead> read_head();
  std::optional<std::string> read_body(const RequestHead& head, RequestBody& framing);
  void pass(RequestHead head, const std::string& body);
  bool send_model_list(int upstream, const std::string& request, NetEvent& event);
  DownstreamFilter key_mask();
  void answer(int status, const std::string& line, const std::string& reason, const std::string& headers = "");
  void refuse(int status, const std::string& line, const std::string& reason);
  void record(NetEvent& event);

  UniqueFd client_;
  Gateway& gateway_;
  int stop_fd_;
  std::string buffered_;
  Clock::time_point start_;
  InferenceExchange exchange_;
};

void InferenceRequest::run() {
  std::optional<RequestHead> head = read_head();
  if (!head) return;
  if (auto refusal = inference_refusal(*head)) {
    return refuse(403, "tnk: " + *refusal + "; the inference endpoint passes only inference APIs (docs/inference.md)",
                  *refusal);
  }
  auto framing = RequestBody::of(*head);
  if (!framing.ok()) return refuse(400, "tnk: " + framing.error().message, framing.error().message);
  start_ = Clock::now();
  exchange_.method = head->method;
  exchange_.path = head->path.substr(0, head->path.find('?'));
  if (auto refusal = take_token(*head, gateway_.settings)) {
    return answer(refusal->status, "tnk: " + refusal->reason, refusal->reason, refusal->extra_headers);
  }
  std::optional<std::string> body = read_body(*head, *framing);
  if (body) pass(std::move(*head), *body);
}

// The head, or nullopt once the connection is over (a malformed or late head answered here).
std::optional<RequestHead> InferenceRequest::read_head() {
  HeadOutcome read =
      read_request_head(client_.get(), buffered_, RequestForm::kOrigin, gateway_.limits.head_timeout, stop_fd_);
  if (read.status != 0) refuse(read.status, "tnk: " + read.reason, read.reason);
  return std::move(read.head);
}

// The whole body, framing removed, or nullopt when the connection is over (answered here when that
// is the request's fault). What follows the body in the client's stream is never read as part of it.
std::optional<std::string> InferenceRequest::read_body(const RequestHead& head, RequestBody& framing) {
  if (expects_continue(head) && !framing.complete() &&
      !send_all(client_.get(), "HTTP/1.1 100 Continue\r\n\r\n", Clock::now() + kAnswerTimeout, stop_fd_)) {
    return std::nullopt;
  }
  std::string body;
  std::string_view unread = std::string_view(buffered_).substr(head.head_bytes);
  std::size_t limit = gateway_.settings.max_request_bytes;
  for (;;) {
    auto taken = framing.take(unread, &body);
    if (!taken.ok()) {
      refuse(400, "tnk: " + taken.error().message, taken.error().message);
      return std::nullopt;
    }
    if (body.size() > limit) {
      std::string reason = "the request body is over the gateway's limit of " + std::to_string(limit) +
                           " bytes (inference.request_limit)";
      answer(413, "tnk: " + reason, reason);
      return std::nullopt;
    }
    if (framing.complete()) return body;
    buffered_.clear();
    Received got =
        receive_more(client_.get(), buffered_, 64 * 1024, Clock::now() + gateway_.limits.head_timeout, stop_fd_);
    if (got == Received::kTimeout) {
      std::string reason = "the request body stopped for " + duration_text(gateway_.limits.head_timeout);
      answer(408, "tnk: " + reason, reason);
      return std::nullopt;
    }
    if (got != Received::kMore && got != Received::kNothingYet) return std::nullopt;  // gone, or tnk stops
    unread = buffered_;
  }
}

// Waits for a slot, connects, sends the request and streams the answer back until the endpoint closes.
void InferenceRequest::pass(RequestHead head, const std::string& body) {
  head.host = gateway_.events.target().host;
  head.port = gateway_.events.target().port;
  OutgoingRequest out = outgoing_request(std::move(head), body, gateway_.settings);
  exchange_.model_requested = out.model_requested;
  exchange_.model_served = out.model_sent;
  exchange_.stream = out.stream;
  RequestSlots::Outcome slot = gateway_.slots.acquire(gateway_.limits.queue_wait, stop_fd_);
  if (slot == RequestSlots::Outcome::kStopped) return;
  if (slot != RequestSlots::Outcome::kGranted) {
    std::string reason = "the sandbox has " + std::to_string(gateway_.slots.limit()) +
                         " requests at the endpoint and as many waiting (inference.concurrency)";
    return answer(429, "tnk: " + reason + "; retry later", reason, "Retry-After: 1\r\n");
  }
  SlotHold hold(gateway_.slots);
  NetEvent event = gateway_.events.event(true);
  auto deadline = Clock::now() + std::chrono::seconds(kForwardConnectTimeoutSeconds);
  auto upstream = open_forward_target(gateway_.events.target(), deadline, stop_fd_, &event.address);
  if (!upstream.ok()) {
    if (upstream.error().sys_errno == ECANCELED) return;
    const ForwardTarget& target = gateway_.events.target();
    std::string reason = "the inference endpoint " + host_port_text(target.host, target.port) +
                         " cannot be reached: " + upstream.error().message;
    return answer(502, "tnk: " + reason, reason);
  }
  set_nodelay(client_.get());
  if (exchange_.method == "GET" && exchange_.path == "/v1/models" && !gateway_.settings.aliases.empty()) {
    if (send_model_list(upstream->get(), out.bytes, event)) record(event);
    return;
  }
  AnswerMeter meter;
  DownstreamTap tap = [&](std::string_view bytes) {
    if (!exchange_.ttfb_ms) exchange_.ttfb_ms = ms_since(start_);
    meter.feed(bytes);
  };
  UpstreamBound nothing_more = [](std::string_view) -> Result<std::size_t> { return std::size_t{0}; };
  uint64_t answer_left = gateway_.limits.max_answer_bytes;
  bool over_limit = false;
  UpstreamBound answer_limit = [&](std::string_view bytes) -> Result<std::size_t> {
    std::size_t pass = bytes.size() <= answer_left ? bytes.size() : static_cast<std::size_t>(answer_left);
    answer_left -= pass;
    over_limit = over_limit || pass < bytes.size();
    return pass;
  };
  RelayStats stats = relay(client_.get(), upstream->get(), gateway_.limits.idle_timeout, stop_fd_, std::move(out.bytes),
                           nothing_more, tap, answer_limit, key_mask());
  meter.finish();
  exchange_.status = meter.status();
  if (!meter.model().empty()) exchange_.model_served = meter.model();
  exchange_.prompt_tokens = meter.usage().prompt_tokens;
  exchange_.completion_tokens = meter.usage().completion_tokens;
  event.bytes_up = stats.bytes_up;
  event.bytes_down = stats.bytes_down;
  event.reason = over_limit ? "the answer was cut at the gateway's limit of " +
                                  std::to_string(gateway_.limits.max_answer_bytes) + " bytes (inference.answer_limit)"
                            : stats.end;
  record(event);
}

// The endpoint's key never reaches the sandbox, even if the endpoint echoes the request (security review
// R3-L1): the answer passes through an AnswerMasker. Without a key there is nothing to mask.
DownstreamFilter InferenceRequest::key_mask() {
  if (gateway_.settings.api_key.empty()) return {};
  auto masker = std::make_shared<AnswerMasker>(std::vector<std::string>{gateway_.settings.api_key});
  return [masker](std::string_view bytes, bool end) -> Result<std::string> {
    if (end) return masker->finish();
    return masker->feed(bytes);
  };
}

// GET /v1/models with aliases: the answer is read whole (it is small), the aliases are added to its
// list, and it is sent on with its new length. False when the connection ended without an answer.
bool InferenceRequest::send_model_list(int upstream, const std::string& request, NetEvent& event) {
  if (!send_all(upstream, request, Clock::now() + kAnswerTimeout, stop_fd_)) return false;
  std::string raw;
  for (;;) {
    Received got = receive_more(upstream, raw, 64 * 1024, Clock::now() + gateway_.limits.idle_timeout, stop_fd_);
    if (got == Received::kClosed) break;
    if (got != Received::kMore && got != Received::kNothingYet) return false;
    if (raw.size() > kMaxModelListBytes) return false;
  }
  if (!gateway_.settings.api_key.empty()) {
    auto masked = mask_whole_answer(raw, {gateway_.settings.api_key});
    if (!masked) return false;
    raw = std::move(*masked);
  }
  exchange_.ttfb_ms = ms_since(start_);
  std::size_t head_end = raw.find("\r\n\r\n");
  std::string body;
  bool chunked = false;
  if (head_end != std::string::npos) {
    std::string head = ascii_lower(std::string_view(raw).substr(0, head_end));
    chunked = head.find("transfer-encoding: chunked") != std::string::npos;
    body = raw.substr(head_end + 4);
  }
  if (chunked) {
    std::string content;
    RequestBody framing = RequestBody::chunked();
    if (!framing.take(body, &content).ok()) content.clear();
    body = std::move(content);
  }
  AnswerMeter meter;
  meter.feed(std::string_view(raw).substr(0, head_end == std::string::npos ? raw.size() : head_end + 4));
  exchange_.status = meter.status();
  std::string answer = raw;
  if (exchange_.status == 200) {
    std::string listed = models_with_aliases(body, gateway_.settings.aliases);
    answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(listed.size()) +
             "\r\nConnection: close\r\n\r\n" + listed;
  }
  event.bytes_up = request.size();
  event.bytes_down = answer.size();
  event.reason = "closed";
  return send_all(client_.get(), answer, Clock::now() + kAnswerTimeout, stop_fd_);
}

// The gateway's own answer to a request it read (401, 413, 429, 408, 502): a record with its status.
void InferenceRequest::answer(int status, const std::string& line, const std::string& reason,
                              const std::string& headers) {
  NetEvent event = gateway_.events.event(true);
  event.reason = reason;
  exchange_.status = status;
  record(event);
  if (send_all(client_.get(), proxy_answer(status, line, headers), Clock::now() + kAnswerTimeout, stop_fd_)) {
    linger_before_close(client_.get(), kLinger, stop_fd_);
  }
}

// Answers `status` with a one-line body, reports the refusal (a net_deny), and ends the connection gently.
void InferenceRequest::refuse(int status, const std::string& line, const std::string& reason) {
  NetEvent event = gateway_.events.event(false);
  event.reason = reason;
  gateway_.events.report(event);
  if (send_all(client_.get(), proxy_answer(status, line), Clock::now() + kAnswerTimeout, stop_fd_)) {
    linger_before_close(client_.get(), kLinger, stop_fd_);
  }
}

void InferenceRequest::record(NetEvent& event) {
  exchange_.latency_ms = ms_since(start_);
  event.inference = exchange_;
  gateway_.events.report(event);
}

}  // namespace

Status serve_inference_forward(int listener_fd, const ForwardTarget& target, int stop_fd, const NetEventSink& on_event,
                               const InferenceLimits& limits, const GatewaySettings& settings) {
  TNK_RETURN_IF_ERROR(check_forward_target(target));
  ForwardEvents events(target, on_event);
  Gateway gateway{events, limits, settings, RequestSlots(limits.concurrency)};
  ConnectionHandler handle = [&gateway](UniqueFd client, int inner_stop) {
    InferenceRequest(std::move(client), gateway, inner_stop).run();
  };
  OverflowHandler overflow = [](int) {};
  return serve_connections(listener_fd, stop_fd, limits.max_connections, handle, overflow,
                           "the inference forwarder's listener");
}

}  // namespace tnk::net
