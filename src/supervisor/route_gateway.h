// The route gateway (tnk-routes): listens inside the sandbox and passes /r/<name>/<rest> to the route's
// https upstream with the route's header added, which only the host holds (net/credential_route.h).
// Built like the inference forwarder (net/inference_forwarder.h): the request head read strictly, one
// request per connection with exactly its body, the answer streamed back until the upstream closes;
// the upstream leg is TLS (supervisor/tls_upstream.h), and the answer passes through an AnswerMasker
// (net/answer_masker.h) that masks the credential (and its Basic form) in the answer's head and its
// de-chunked body, should the upstream echo them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "net/credential_route.h"
#include "supervisor/tls_upstream.h"

namespace tnk::supervisor {

// Inside the sandbox (beside the proxies' 3128 and 3129): the gateway of every route.
inline constexpr uint16_t kRoutesPort = 3130;

// One request, as the route_request audit record has it (docs/audit-format.md). Never the credential:
// the path is the sandbox's own (without its query), the header is not in it.
struct RouteEvent {
  std::string route;  // the name asked for
  std::string method;
  std::string path;      // the path below the route, without the query
  std::string upstream;  // host:port; empty when refused
  bool allowed = false;
  int status = 0;      // the answer's status: the upstream's, or tnk's own refusal (403, 400, 502)
  std::string reason;  // a refusal's reason, else how the connection ended ("closed", "error: ...")
  uint64_t bytes_up = 0, bytes_down = 0;
  int64_t latency_ms = 0;  // from the request head to the end of the answer
};
using RouteEventSink = std::function<void(const RouteEvent&)>;

// The relay's event line ("event": "route_request") and back.
nlohmann::json to_json(const RouteEvent& event);
RouteEvent route_event_from_json(const nlohmann::json& json);

struct RouteLimits {
  std::size_t max_connections = 32;
  std::chrono::milliseconds head_timeout{60'000};
  std::chrono::milliseconds idle_timeout{600'000};
};

// A route with its TLS context, made before the relay drops its privileges.
struct GatewayRoute {
  net::CredentialRoute route;
  SslContext tls;
};
Result<std::vector<GatewayRoute>> prepare_routes(const std::vector<net::CredentialRoute>& routes);

// Serves until `stop_fd` becomes readable. An unknown route, a method or path its rules refuse: 403 with
// a one-line body saying why; a malformed head or body: 400 (431); an upstream that cannot be reached or
// fails TLS: 502. Every request is one event.
Status serve_routes(int listener_fd, const std::vector<GatewayRoute>& routes, int stop_fd,
                    const RouteEventSink& on_event, const RouteLimits& limits = {});

}  // namespace tnk::supervisor
