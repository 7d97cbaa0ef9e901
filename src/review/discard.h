// `tnk sandbox discard PATH...`: dropping part of a review layer, the rest staying. The caller has the
// sandbox stopped (overlayfs forbids changing its upper directory under a mounted overlay).
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "review/baseline.h"

namespace tnk::review {

// Refuses a path inside a directory the sandbox replaced whole (an opaque one), naming the directory
// to discard instead: removing the layer's entry there would hide the project's, not restore it.
Status check_droppable(int upper_fd, const std::vector<std::string>& paths);

// Removes what the layer `upper_fd` holds at and below each of `paths` (project-relative, not "";
// checked with check_droppable first), never following a link, so the project's entry shows through
// there again.
Status drop_paths(int upper_fd, const std::vector<std::string>& paths);

// Stamps `paths` (and what is below them) afresh from the project into `baseline`: the sandbox sees
// the project's entries there now.
Status restamp_paths(int project_fd, const std::vector<std::string>& paths, Baseline& baseline);

}  // namespace tnk::review
