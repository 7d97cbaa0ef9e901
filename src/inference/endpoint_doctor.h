// `tnk doctor`'s checks of the inference endpoint for the known mistakes: a server that listens on
// every interface, one with no model loaded, a context window smaller than the profile needs, and an
// API key the server refuses (or a key it wants that tnk.toml does not name). The network and /proc
// come in through Fetch and ReadFile, so the unit tests hand the checks fakes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/result.h"
#include "doctor/doctor.h"
#include "inference/http_parse.h"

namespace tnk::inference {

struct EndpointSetup {
  std::string url;                 // the endpoint as the host reaches it (host_inference_url)
  std::string key;                 // the configured API key; "" for none (never shown)
  std::string key_source;          // "env NAME", "file PATH" or "none" (api_key_source)
  std::optional<Error> key_error;  // read_api_key's refusal, when it refused
  std::string profile;             // the profile whose manifest's min_context_window applies
  std::optional<uint64_t> min_context_window;
  std::optional<uint64_t> configured_context;  // context_window / TNK_CTX_WINDOW
};

// One GET, with `Authorization: Bearer <bearer>` when it is not empty.
using Fetch = std::function<Result<HttpResponse>(const std::string& url, const std::string& bearer)>;
// A whole file, nullopt when it cannot be read (/proc/net/tcp, /proc/net/tcp6).
using ReadFile = std::function<std::optional<std::string>(const std::string& path)>;

// Adds the checks inference_bind, inference_models, inference_context and inference_key. Each GET is
// made once however many checks look at its answer.
void add_endpoint_checks(doctor::Registry& registry, const EndpointSetup& setup, Fetch fetch, ReadFile read_file);

}  // namespace tnk::inference
