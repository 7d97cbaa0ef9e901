// The inference gateway (docs/inference.md): listens inside the sandbox at host.lima.internal:<port>
// and passes to the host's inference endpoint only the requests that net/inference_paths.h lists, with
// the sandbox's token taken out and the endpoint's key put in (net/gateway_request.h), at most
// `concurrency` at a time (net/request_slots.h). Answers stream back as they arrive (server-sent
// events are not held), with the endpoint's key masked should the endpoint echo it (net/answer_masker.h:
// the content as it was, chunked answers framed again); a copy is read for the request's record
// (net/answer_meter.h).
//
// One request per connection: the request's whole body is read (bounded), the request goes upstream
// with "Connection: close" and its Content-Length, and the connection ends with the answer. Whatever the
// client sent after that body (a pipelined request) is never passed; a keep-alive client sends it again
// on a new connection, where it is checked like the first. So every request that reaches the endpoint
// was checked, without reading the answers' framing.
#pragma once

#include <chrono>
#include <cstddef>

#include "core/result.h"
#include "net/forwarder.h"
#include "net/gateway_request.h"
#include "net/net_event.h"

namespace tnk::net {

// At most this many connections per sandbox at a time (more are closed at once): enough for an agent's
// parallel requests, few enough that one sandbox cannot hold every slot of an endpoint that all
// projects share.
inline constexpr std::size_t kInferenceMaxConnections = 32;
// A connection with no byte in either direction for this long is closed. Long, because a model may
// think for minutes before its first token; finite, so that a forgotten connection frees its slot.
inline constexpr std::chrono::minutes kInferenceIdleTimeout{10};
// The request head must arrive within this, and the body with no gap longer than this (the endpoint is
// not connected before the whole request has).
inline constexpr std::chrono::seconds kInferenceHeadTimeout{60};
// An answer is cut after this many bytes: far beyond any model's answer, short of filling the sandbox's disk.
inline constexpr uint64_t kMaxInferenceAnswerBytes = uint64_t{1} << 30;
// A request that finds every slot taken waits this long for one, then is answered 429.
inline constexpr std::chrono::seconds kInferenceQueueWait{60};

// The limits above, as one value (tests shorten them).
struct InferenceLimits {
  std::size_t max_connections = kInferenceMaxConnections;
  std::chrono::milliseconds head_timeout = kInferenceHeadTimeout;
  std::chrono::milliseconds idle_timeout = kInferenceIdleTimeout;
  std::chrono::milliseconds queue_wait = kInferenceQueueWait;
  std::size_t concurrency = 4;                           // requests at the endpoint at a time; as many more wait
  uint64_t max_answer_bytes = kMaxInferenceAnswerBytes;  // an answer longer than this is cut
};

// Serves until `stop_fd` becomes readable (forever when -1), like serve_forward. A request the list
// refuses is answered 403 with a one-line body naming the path and why, and reported as a refusal
// (a net_deny record); a malformed head or body framing is a 400 (431 for an oversized head), also
// reported. Every other request is one event with its InferenceExchange when it ends (an
// inference_request record), the gateway's own answers (401, 413, 429, 502) included.
Status serve_inference_forward(int listener_fd, const ForwardTarget& target, int stop_fd = -1,
                               const NetEventSink& on_event = {}, const InferenceLimits& limits = {},
                               const GatewaySettings& settings = {});

}  // namespace tnk::net
