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

// rm -rf that refuses to descend into a mount point (failed, naming it) and follows no link.
// A missing `dir` is success.
Status remove_tree(const std::filesystem::path& dir);

}  // namespace tnk::image
