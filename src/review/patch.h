// The changed lines of a review layer as a git-style unified diff (`tnk sandbox diff --patch`), which
// `git apply` accepts in a copy of the project: text hunks, a "GIT binary patch" for binary files,
// `old mode`/`new mode` for a chmod, links as git shows them (their target, without a newline).
// Everything is read here by descriptors without following a link; no git runs on the layer.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "review/diff.h"

namespace tnk::review {

enum class PatchLineKind { kHeader, kHunk, kContext, kRemoved, kAdded, kPlain };

struct PatchLine {
  PatchLineKind kind = PatchLineKind::kPlain;
  std::string text;  // without the line's '\n'
};

// Files larger than this are "Binary files ... differ" (which git apply refuses): a sandbox's huge
// file should not take the host's memory to print.
inline constexpr uint64_t kMaxPatchedFile = 16u << 20;

// The patch of `changes` (diff_layer's, of the layer `upper_fd` over the project `project_fd`).
// Directories are not in it (git has none): their files are; a deleted directory is every file below
// it. Devices, FIFOs and sockets are left out.
Result<std::vector<PatchLine>> patch_of(int upper_fd, int project_fd, const std::vector<Change>& changes);

}  // namespace tnk::review
