#include "net/inference_forwarder.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <optional>
#include <string>

#include "net/head_reader.h"
#include "net/http_request.h"
#include "net/inference_paths.h"
#include "net/proxy_session.h"
#include "net/relay.h"
#include "net/request_body.h"
#include "net/serve_loop.h"

namespace tnk::net {
namespace {

constexpr std::chrono::milliseconds kAnswerTimeout{5'000};  // to write a refusal
constexpr std::chrono::milliseconds kLinger{2'000};         // to read what follows a refusal

class InferenceRequest {
 public:
  InferenceRequest(UniqueFd client, ForwardEvents& events, const InferenceLimits& limits, int stop_fd)
      : client_(std::move(client)), events_(events), limits_(limits), stop_fd_(stop_fd) {}

  void run() {
    std::optional<RequestHead> head = read_head();
    if (!head) return;
    if (auto refusal = inference_refusal(*head)) {
      return refuse(403, "tnk: " + *refusal + "; the inference endpoint passes only inference APIs (docs/inference.md)",
                    *refusal);
    }
    auto body = RequestBody::of(*head);
    if (!body.ok()) return refuse(400, "tnk: " + body.error().message, body.error().message);
    pass(*head, *body);
  }

 private:
  std::optional<RequestHead> read_head();
  void pass(RequestHead head, RequestBody& body);
  void refuse(int status, const std::string& line, const std::string& reason);

  UniqueFd client_;
  ForwardEvents& events_;
  const InferenceLimits& limits_;
  int stop_fd_;
  std::string buffered_;
};

// The head, or nullopt once the connection is over (a malformed or late head answered here).
std::optional<RequestHead> InferenceRequest::read_head() {
  HeadOutcome read = read_request_head(client_.get(), buffered_, RequestForm::kOrigin, limits_.head_timeout, stop_fd_);
  if (read.status != 0) refuse(read.status, "tnk: " + read.reason, read.reason);
  return std::move(read.head);
}

// Sends the head (Host naming the endpoint, "Connection: close") and exactly the body, then the answer
// back until the endpoint closes.
void InferenceRequest::pass(RequestHead head, RequestBody& body) {
  NetEvent event = events_.event(true);
  auto deadline = Clock::now() + std::chrono::seconds(kForwardConnectTimeoutSeconds);
  auto upstream = open_forward_target(events_.target(), deadline, stop_fd_, &event.address);
  if (!upstream.ok()) {
    events_.report_unreachable(event, upstream.error());
    if (upstream.error().sys_errno == ECANCELED) return;
    std::string line = "tnk: the inference endpoint " + host_port_text(events_.target().host, events_.target().port) +
                       " cannot be reached: " + upstream.error().message;
    if (send_all(client_.get(), proxy_answer(502, line), Clock::now() + kAnswerTimeout, stop_fd_)) {
      linger_before_close(client_.get(), kLinger, stop_fd_);
    }
    return;
  }
  head.host = events_.target().host;
  head.port = events_.target().port;
  auto first_up = first_request_bytes(head, std::string_view(buffered_).substr(head.head_bytes), body);
  if (!first_up.ok()) return refuse(400, "tnk: " + first_up.error().message, first_up.error().message);
  UpstreamBound bound = [&body](std::string_view data) { return body.take(data); };
  set_nodelay(client_.get());
  RelayStats stats = relay(client_.get(), upstream->get(), limits_.idle_timeout, stop_fd_, std::move(*first_up), bound);
  event.bytes_up = stats.bytes_up;
  event.bytes_down = stats.bytes_down;
  event.reason = stats.end;
  events_.report(event);
}

// Answers `status` with a one-line body, reports the refusal, and ends the connection gently.
void InferenceRequest::refuse(int status, const std::string& line, const std::string& reason) {
  NetEvent event = events_.event(false);
  event.reason = reason;
  events_.report(event);
  if (send_all(client_.get(), proxy_answer(status, line), Clock::now() + kAnswerTimeout, stop_fd_)) {
    linger_before_close(client_.get(), kLinger, stop_fd_);
  }
}

}  // namespace

Status serve_inference_forward(int listener_fd, const ForwardTarget& target, int stop_fd, const NetEventSink& on_event,
                               const InferenceLimits& limits) {
  TNK_RETURN_IF_ERROR(check_forward_target(target));
  ForwardEvents events(target, on_event);
  ConnectionHandler handle = [&events, &limits](UniqueFd client, int inner_stop) {
    InferenceRequest(std::move(client), events, limits, inner_stop).run();
  };
  OverflowHandler overflow = [](int) {};
  return serve_connections(listener_fd, stop_fd, limits.max_connections, handle, overflow,
                           "the inference forwarder's listener");
}

}  // namespace tnk::net
