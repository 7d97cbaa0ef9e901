// What model the inference server has loaded and how large its context is, from one
// GET <base>/models (OpenAI-compatible: llama.cpp, vLLM, Ollama, LM Studio, ...).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tnk::inference {

struct ModelInfo {
  bool reachable = false;  // false only when no server answered (refused, timed out, unresolvable)
  std::optional<std::string> model_id;
  std::optional<uint64_t> context_window;
  std::string problem;   // why unreachable or unparsable; empty on success
  std::string base_url;  // the endpoint probed, e.g. http://127.0.0.1:8080/v1
};

// The parts of a /models answer we use. Pure, so tests feed it bodies directly.
struct ModelsListing {
  std::optional<std::string> model_id;
  std::optional<uint64_t> context_window;
};

// Model id: the first data[].id that is non-empty after taking its last path component
// ("/models/qwen.gguf" -> "qwen.gguf"; '/' and '\\' both separate). Context window: the server's
// own value, no floor (unlike the original, whose max(ctx, 131072) overstated it): looked up in
// the chosen data[] item, then the other items, then the top level; see context_keys() in the .cc.
// nullopt when `body` is not a JSON object.
std::optional<ModelsListing> parse_models_listing(std::string_view body);

// The last path component of a model id; "" for "" or "dir/".
std::string model_name_from_id(std::string_view id);

// GETs <base_url>/models once within `timeout`. Never fails: the outcome is in ModelInfo.
// A server that answers with a non-2xx status, non-JSON, or no model is reachable with `problem` set.
// With `bearer` (the configured API key), the GET carries it, as the gateway's requests do.
ModelInfo probe_models(const std::string& base_url, std::chrono::milliseconds timeout = std::chrono::seconds(1),
                       const std::string& bearer = "");

}  // namespace tnk::inference
