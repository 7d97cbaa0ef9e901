// A sandbox's review layer (docs/workspace.md): where its files are in the state directory, making it
// (the empty upper and work directories, the project's baseline) and whether it holds anything.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include "core/result.h"
#include "review/baseline.h"

namespace tnk::review {

struct Layer {
  std::filesystem::path dir, upper, work, baseline;
};

// The layer of the sandbox whose state directory is `state_dir` (state/layout.h's names).
Layer layer_in(const std::filesystem::path& state_dir);

// Makes the layer if it has no baseline yet: the directories, then the project's stamps (atomically).
// An existing layer is kept as it is: a restarted sandbox sees its pending changes again.
Status ensure_layer(const Layer& layer, const std::filesystem::path& project);

// Whether the layer exists and its upper directory holds anything (a change, or an applied file kept
// below an opaque directory).
bool layer_in_use(const Layer& layer);

// Overlayfs shows the upper directory's owner and mode at the top of the project inside, so the layer's
// upper gets the project's mode and, with `owner` (run as root), that owner: whom the backend's id map
// shows as `agent`.
struct Owner {
  uint32_t uid = 0, gid = 0;
};
Status prepare_layer_top(const std::filesystem::path& upper, const std::filesystem::path& project,
                         std::optional<Owner> owner);

Result<Baseline> read_layer_baseline(const Layer& layer);
Status write_layer_baseline(const Layer& layer, const Baseline& baseline);

}  // namespace tnk::review
