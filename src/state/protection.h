// The project paths a sandbox may read but not change (manifest `mounts.readonly`, and the git dirs of
// a linked worktree: docs/workspace.md), what became of each when the sandbox started, and the record
// of that in the state directory (kProtectionFile) that inspect, sessions and stop read back.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace tnk::state {

enum class Protection {
  kProtected,       // a read-only bind the sandbox cannot undo
  kMissing,         // absent at start: nothing to bind without creating it in the project
  kSymlink,         // a symbolic link on the way: not followed, not protected
  kNotADirectory,   // a file where the path needs a directory (a .git file that is no worktree of it)
  kNotEnforceable,  // this backend cannot make it read-only to everything inside (lima)
  kAppeared,        // was kMissing, exists now: unprotected until the next start
};

std::string_view to_string(Protection state);
std::optional<Protection> parse_protection(std::string_view name);

struct ProtectedPath {
  std::string path;  // as the user wrote it (project-relative) or, outside the project, absolute
  // Where it is on the host; kMissing: its first missing component, whose appearance is what to report
  // (a `.git` file made where there was no repository, for `.git/hooks`).
  std::filesystem::path host_path;
  Protection state = Protection::kMissing;
};

// What base/rel is now, shown as `shown`, without following a symbolic link anywhere below `base` (the
// project or a git dir): kProtected for a file or directory that can be bound, kMissing, kSymlink or
// kNotADirectory.
ProtectedPath classify_path(std::string shown, const std::filesystem::path& base, const std::string& rel);

// The record: a JSON list of {path, host_path, state}; read_protection of a sandbox without one
// (started by an older tnk, or never) is an empty list.
nlohmann::json to_json(const std::vector<ProtectedPath>& paths);
Status write_protection(const std::filesystem::path& sandbox_dir, const std::vector<ProtectedPath>& paths);
Result<std::vector<ProtectedPath>> read_protection(const std::filesystem::path& sandbox_dir);

// The paths recorded kMissing that exist now: marked kAppeared in `paths`, and returned.
std::vector<ProtectedPath> mark_appeared(std::vector<ProtectedPath>& paths);

// One line for start's output and stop's: the paths that are not protected, and why. Empty when all are.
std::string unprotected_summary(const std::vector<ProtectedPath>& paths);

}  // namespace tnk::state
