// Whole-tree operations on image directories that must not wander: they never follow symbolic
// links and never cross into another mount (a build killed mid-way could, on a host without mount
// namespaces, leave /proc or /dev mounted inside its tree; removing through such a mount would
// delete host files).
#pragma once

#include <cstdint>
#include <filesystem>

#include "core/result.h"

namespace tnk::image {

struct TreeSize {
  uint64_t bytes = 0;   // apparent size, each inode once (hard links)
  uint64_t inodes = 0;  // distinct inodes, the top directory included
};

Result<TreeSize> measure_tree(const std::filesystem::path& dir);

// measure_tree, and where directories are closed to an ordinary user (a rootless image's
// /etc/ssl/private, owned by the range), again as the mapped root of the user's range.
Result<TreeSize> measure_owned_tree(const std::filesystem::path& dir);

// rm -rf that refuses to descend into a mount point (failed, naming it) and follows no link.
// A missing `dir` is success.
Status remove_tree(const std::filesystem::path& dir);

// remove_tree, and where that is refused to an ordinary user, again as the mapped root of the user's
// range (idmap::run_as_range_owner): a rootless image build leaves files owned by the range.
Status remove_owned_tree(const std::filesystem::path& dir);

// A rootless image as mmdebstrap's unshare mode leaves it has `agent`'s files (the home directory) on
// range id kAgentId; a rootless sandbox shows the user as `agent`. Gives those files to the user.
Status give_agent_files_to_user(const std::filesystem::path& dir);

}  // namespace tnk::image
