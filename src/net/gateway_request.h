// The inference gateway's changes to a request that passed the path check (net/inference_paths.h), as
// pure functions of the request and the sandbox's settings: the sandbox's token is checked and taken
// out, the endpoint's key is put in (it exists only on the host), a model alias becomes the model the
// server has, and the answer is asked for uncompressed so that its token counts can be read.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "net/http_request.h"

namespace tnk::net {

inline constexpr std::size_t kMaxInferenceRequestBytes = 32 * 1024 * 1024;  // a long context with images

struct GatewaySettings {
  // The sandbox's token (TNK_INFERENCE_TOKEN inside). Required when there is a key: only a request
  // that shows it gets the key added. Whatever credential a request carries is never passed on.
  std::string token;
  std::string api_key;                         // empty: none
  std::map<std::string, std::string> aliases;  // asked-for model -> served model
  std::size_t max_request_bytes = kMaxInferenceRequestBytes;
};

struct GatewayRefusal {
  int status = 0;
  std::string reason;  // for the answer and the record
  std::string extra_headers;
};

// Checks the credential the request carries (`Authorization: Bearer T` or `x-api-key: T`) against the
// token and removes every such header from `head`. Refused (401) when a key is configured and the
// request does not show the token.
std::optional<GatewayRefusal> take_token(RequestHead& head, const GatewaySettings& settings);

struct OutgoingRequest {
  std::string bytes;            // the head and the whole body, as the endpoint gets them
  std::string model_requested;  // the body's "model" as sent; "" when none
  std::string model_sent;       // after the alias
  bool stream = false;          // the answer will be streamed
};

// The request for the endpoint: `head` (already addressed to it) in origin form with
// "Connection: close", the key added (`x-api-key` for Anthropic's /v1/messages, `Authorization:
// Bearer` otherwise), Expect and Accept-Encoding dropped, and `body` (the whole body, framing
// removed) with its Content-Length, its "model" replaced when it names an alias.
OutgoingRequest outgoing_request(RequestHead head, std::string body, const GatewaySettings& settings);

// A /v1/models answer's JSON body with one entry per alias added; any other body unchanged.
std::string models_with_aliases(std::string_view body, const std::map<std::string, std::string>& aliases);

}  // namespace tnk::net
