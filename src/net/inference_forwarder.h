// The inference forwarder (security review L8): listens inside the sandbox at host.lima.internal:<port>
// and passes to the host's inference endpoint only the requests that net/inference_paths.h lists. The
// first step of the inference gateway (issue 15): it reads each request head, never the bodies'
// content, and streams the answers through unchanged (server-sent events arrive as sent).
//
// One request per connection: the request goes upstream with "Connection: close", exactly its body
// follows (Content-Length or chunked, counted), and the connection ends with the answer. Whatever the
// client sent after that body (a pipelined request) is never passed; a keep-alive client sends it again
// on a new connection, where it is checked like the first. So every request that reaches the endpoint
// was checked, without reading the answers' framing.
#pragma once

#include <chrono>
#include <cstddef>

#include "core/result.h"
#include "net/forwarder.h"
#include "net/net_event.h"

namespace tnk::net {

// At most this many connections per sandbox at a time (more are closed at once): enough for an agent's
// parallel requests, few enough that one sandbox cannot hold every slot of an endpoint that all
// projects share.
inline constexpr std::size_t kInferenceMaxConnections = 32;
// A connection with no byte in either direction for this long is closed. Long, because a model may
// think for minutes before its first token; finite, so that a forgotten connection frees its slot.
inline constexpr std::chrono::minutes kInferenceIdleTimeout{10};
// The request head must arrive within this (the endpoint is not connected before it has).
inline constexpr std::chrono::seconds kInferenceHeadTimeout{60};

// The limits above, as one value (tests shorten them).
struct InferenceLimits {
  std::size_t max_connections = kInferenceMaxConnections;
  std::chrono::milliseconds head_timeout = kInferenceHeadTimeout;
  std::chrono::milliseconds idle_timeout = kInferenceIdleTimeout;
};

// Serves until `stop_fd` becomes readable (forever when -1), like serve_forward. A request the list
// refuses is answered 403 with a one-line body naming the path and why, and reported as a refusal
// (a net_deny record); a malformed head or body framing is a 400 (431 for an oversized head), also
// reported. An allowed request is one event when its connection ends, with its bytes.
Status serve_inference_forward(int listener_fd, const ForwardTarget& target, int stop_fd = -1,
                               const NetEventSink& on_event = {}, const InferenceLimits& limits = {});

}  // namespace tnk::net
