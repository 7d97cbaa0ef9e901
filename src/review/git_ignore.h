// Which changed paths the project's own .gitignore rules ignore, as the host's git sees them: the
// rules of the project on the host (not the layer's), so a sandbox cannot hide a change by adding an
// ignore rule. What the layer keeps is not filtered, only what `diff` reports.
#pragma once

#include <filesystem>
#include <vector>

#include "core/result.h"
#include "review/diff.h"

namespace tnk::review {

// Marks the ignored changes (Change::ignored) by running `git check-ignore` (an argv, in batches) in
// the project. Returns false, marking nothing, when the project is not a git work tree or git is
// missing.
Result<bool> mark_ignored(const std::filesystem::path& project, std::vector<Change>& changes);

}  // namespace tnk::review
