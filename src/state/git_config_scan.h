// Which entries of a git config file can make the host's git run something (issue 32): read from
// `git config --file F --list -z` (git's own parser; --file reads no includes and runs nothing).
// An allow-list of keys that are data, not a list of keys that are commands: git adds command-valued
// keys over the years (core.fsmonitor, uploadpack, alias.*, filters, include.path ...), and a key
// tnk has never heard of is then treated as one that runs, which fails closed.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tnk::state {

// The records of git's -z output (NUL-terminated), without empty ones.
std::vector<std::string> split_z(std::string_view text);

// Whether a core.worktree value is harmless: where git would check files out (`git submodule update`)
// must stay inside the project. Given the value as written.
using WorktreeCheck = std::function<bool(const std::string& value)>;

// The "key=value" entries of `list_z` (key\nvalue\0 records) whose key is not on the allow-list,
// sorted; empty when every entry is data. A key without a value (`[core] bare`) has no newline.
std::vector<std::string> runnable_entries(std::string_view list_z, const WorktreeCheck& worktree_inside);

}  // namespace tnk::state
