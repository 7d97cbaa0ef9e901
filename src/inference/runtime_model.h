// Which model name and context window a sandbox is told about (TNK_MODEL_NAME, TNK_CTX_WINDOW):
// the server's own answer first, then tnk.toml, then a stated fallback. Never stalls, never fails.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "inference/model_probe.h"

namespace tnk::inference {

// Used only when neither the server nor the config says anything: a guess, not a floor.
inline constexpr uint64_t kFallbackContextWindow = 32768;
inline constexpr const char* kFallbackModelName = "default";

struct RuntimeModel {
  std::string model_name;
  uint64_t context_window = kFallbackContextWindow;  // always known, see context_source
  std::string source;                                // of model_name: "server", "config" or "default"
  std::string context_source;                        // of context_window: "server", "config" or "default"
  std::string note;                                  // one line for the CLI when anything fell back; empty otherwise
};

// Model: the server's id when it answered with one, else `configured_model` (non-blank), else
// "default". Context: the server's value, else `configured_ctx`, else kFallbackContextWindow.
RuntimeModel resolve_runtime_model(const ModelInfo& probe, std::optional<std::string> configured_model,
                                   std::optional<uint64_t> configured_ctx);

}  // namespace tnk::inference
