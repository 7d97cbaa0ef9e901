// What a running sandbox was started with and tells every session: the endpoint and the model
// (TNK_MODEL_NAME, TNK_CTX_WINDOW). Kept beside the record at each start, so that a command that only
// enters the running sandbox (the warm path of exec and shell) neither asks the endpoint again nor
// prints its notes again: the sandbox's gateway forwards to the endpoint it started with anyway.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/result.h"
#include "inference/runtime_model.h"
#include "state/store.h"

namespace tnk::sandbox {

struct StartedWith {
  int64_t started_at = 0;     // the record's started_at of the start that wrote it
  std::string inference_url;  // where the host reached the endpoint
  inference::RuntimeModel model;
};

inline constexpr const char* kStartedWithFile = "started_with.json";

Status save_started_with(const state::Store& store, const std::string& id, const StartedWith& started);

// The file of the start at `started_at`; none when it is missing, unreadable or of another start.
std::optional<StartedWith> load_started_with(const state::Store& store, const std::string& id, int64_t started_at);

}  // namespace tnk::sandbox
