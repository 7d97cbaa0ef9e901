// Which requests the inference forwarder passes to the host's endpoint: the inference APIs of the
// OpenAI-compatible servers, Anthropic-style /v1/messages, Ollama's chat/generate/embed/show/tags/version
// and health checks. Everything else is refused (security review L8): Ollama's /api/pull, /api/push,
// /api/copy, /api/create and /api/delete, llama.cpp's /slots (which writes files on the host), /props...
// The decision reads the path only: the query may pass (clients add ?beta=true), but a path that a
// server could read as another one (percent-encoding, dot or empty segments) is refused.
#pragma once

#include <optional>
#include <string>

#include "net/http_request.h"

namespace tnk::net {

// Why `head` (parsed as RequestForm::kOrigin) is refused, or nullopt when it passes.
std::optional<std::string> inference_refusal(const RequestHead& head);

}  // namespace tnk::net
