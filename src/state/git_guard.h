// What the host's git reads from a project and would run (issue 32; docs/workspace.md, "The host's
// git"). The git dirs a plain `git status`, `git submodule update` or `git add` at the top reaches:
// the top's (for a linked worktree, its own git dir and the common dir), the common dir's other
// worktrees and its submodules (modules/), every repository the index links as a gitlink and every
// repository below the top that `git add` would link, recursively. In each, the entries that make git
// run a command or read another directory: config entries that are not data (git_config_scan.h),
// config.worktree, commondir, hooks (core.hooksPath's when the trusted top config sets one).
//
// tnk takes a snapshot of them at start; after each session, at stop and after `apply`, what is new
// or changed since is *held*: renamed to NAME.tnk-held, which git never reads, and reported. A rename
// rather than a deletion, so nothing is lost; the user renames it back after reading it.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/result.h"

namespace tnk::state {

struct GitEntry {
  std::string fingerprint;  // config: its runnable entries ("" when all are data); otherwise a stamp
  std::string what;         // what git does with it, for messages
};
using GitSnapshot = std::map<std::string, GitEntry>;  // absolute host path -> entry

// Called for each entry before the walk runs git in that repository (to list its gitlinks), so a
// visitor that holds an entry has done so before git reads it.
using GitVisit = std::function<void(const std::filesystem::path& entry, const GitEntry& now)>;

// Walks the project's git dirs (bounded: 200 git dirs, 4 levels of gitlinks). Only entries inside
// `roots` (the project, and a linked worktree's shared common dir) are visited: nothing else is the
// sandbox's to write. git runs as core/host_git.h says (nothing of a config runs), and never with a
// config the visitor saw change (it was held first).
void walk_git(const std::filesystem::path& project, const GitVisit& visit);
GitSnapshot git_snapshot(const std::filesystem::path& project);

struct HeldEntry {
  std::string path;     // the entry's host path
  std::string held_as;  // where it is now; empty: could not be held (error says why)
  std::string what;
  std::string error;
};

// Whether `now` must be held against `start`: new or changed, and (a config) with runnable entries.
bool must_hold(const GitSnapshot& start, const std::string& path, const GitEntry& now);

// Renames `entry` to NAME.tnk-held (NAME.tnk-held-2 ... when taken), opening each directory from the
// root of `roots` that holds it without following a symbolic link, and never replacing anything.
HeldEntry hold_git_entry(const std::filesystem::path& entry, const GitEntry& now,
                         const std::vector<std::filesystem::path>& roots);

// The roots the sandbox writes: the project, and a linked worktree's common dir.
std::vector<std::filesystem::path> git_roots(const std::filesystem::path& project);

// What changes when anything the host's git follows from the top repository changes: the inode, size
// and modification time of its .git (a directory, or a linked worktree's gitdir file and the git dir it
// names), its index, modules/ and worktrees/. Only lstat: no git runs. After a session the walk runs
// again only when this changed, so that a command in a running sandbox does not pay four git processes
// (about 27 ms on a 5,000-file repository); a repository the sandbox made below the top and never
// linked in the index is found at stop and after `apply`, which always walk.
std::string git_stamp(const std::filesystem::path& project);

// The record (kGitSnapshotFile): the snapshot at start, what was held since, and the stamp of the last
// walk.
Status write_git_record(const std::filesystem::path& sandbox_dir, const GitSnapshot& start,
                        const std::vector<HeldEntry>& held, const std::string& stamp);
struct GitRecord {
  bool present = false;  // false: started by an older tnk, nothing to compare with
  GitSnapshot start;
  std::vector<HeldEntry> held;
  std::string stamp;  // git_stamp at the last walk
};
Result<GitRecord> read_git_record(const std::filesystem::path& sandbox_dir);

}  // namespace tnk::state
