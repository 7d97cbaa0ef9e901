// A project that is a linked worktree (`git worktree add`): its `.git` is a file naming the worktree's
// git dir in another repository, whose common dir holds the objects, refs, config and hooks. Those two
// directories are shared into the sandbox at their own paths (docs/workspace.md).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace tnk::state {

struct LinkedWorktree {
  std::filesystem::path git_dir;     // e.g. /home/u/code/main/.git/worktrees/feature (canonical)
  std::filesystem::path common_dir;  // e.g. /home/u/code/main/.git (canonical)
};

// The worktree's dirs when project/.git is a file "gitdir: X" and X is a worktree of this project: X
// names project/.git in its own `gitdir` file and lies in its common dir's `worktrees/`. Anything
// else a .git file could point at (any directory of the user's) is not shared: nullopt, and `why`
// says what was found when .git is a file.
std::optional<LinkedWorktree> linked_worktree(const std::filesystem::path& project, std::string* why);

}  // namespace tnk::state
