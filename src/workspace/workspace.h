// workspace: the workspace_root rules. Maps the current directory to the project it belongs to
// (the first directory below the root) and refuses roots that would expose too much of the host
// ("/", $HOME itself, a parent of $HOME, anything outside $HOME). All comparisons are made on
// canonical paths, component by component, so symlinks on either side resolve the same way.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "core/result.h"

namespace tnk::workspace {

// Expands "~", "~/x", "$HOME", "$HOME/x", "${HOME}", "${HOME}/x" against `home`. Anything else
// ("~user/x", "$HOMEfoo", relative or absolute paths) is returned unchanged; the caller rejects
// relative results. An empty `home` expands nothing.
std::filesystem::path expand_user_path(std::string_view raw, const std::filesystem::path& home);

// True when `inner` is `outer` or lies below it, compared component-wise after lexical normalization
// (/home/u/code2 is not within /home/u/code). Pass canonical absolute paths.
bool is_within(const std::filesystem::path& inner, const std::filesystem::path& outer);

struct Project {
  std::filesystem::path root;          // canonical workspace root
  std::filesystem::path dir;           // canonical project dir: root / name
  std::string name;                    // first path component below root
  std::filesystem::path relative_cwd;  // canonical cwd relative to dir; empty at the project top
};

// Validates the workspace root and finds the project that contains `cwd`.
// `workspace_root` is already expanded (expand_user_path); root, home and cwd are canonicalized.
// Errors: usage (relative root, root is "/", $HOME, a parent of or outside $HOME, cwd at the root or
// outside it), not_found (root or cwd missing), permission_denied, failed (other OS errors).
// The canonical workspace root, once it exists and passes the rules (inside $HOME, not $HOME,
// not '/', not a parent of $HOME). Used by resolve_project and by `tnk doctor`.
Result<std::filesystem::path> check_workspace_root(const std::filesystem::path& workspace_root,
                                                   const std::filesystem::path& home);

Result<Project> resolve_project(const std::filesystem::path& workspace_root, const std::filesystem::path& home,
                                const std::filesystem::path& cwd);

// The directory inside the sandbox that corresponds to the cwd: mount_point + "/" + relative_cwd,
// without a trailing '/'.
std::string guest_workdir(const Project& p, const std::string& mount_point);

}  // namespace tnk::workspace
