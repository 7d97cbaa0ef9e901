// What a review layer (an overlayfs upper directory over the project) changes in the project: read
// from the upper directory, compared with the project. Renames show as a deletion and an addition
// (the overlay makes no directory redirects with userxattr); the layer's own owner ids are not a change.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace tnk::review {

enum class ChangeKind { kAdded, kModified, kDeleted, kMode };
enum class EntryType { kNone, kFile, kDir, kSymlink, kOther };

struct Change {
  std::string path;  // project-relative
  ChangeKind kind = ChangeKind::kAdded;
  EntryType type = EntryType::kNone;      // what the layer has (a deletion: kNone)
  EntryType old_type = EntryType::kNone;  // what the project has (an addition: kNone)
  uint32_t old_mode = 0, new_mode = 0;    // permission bits, 0 where absent
  std::string host_run;                   // why it runs on the host (host_run.h); empty: it does not
  bool ignored = false;                   // .gitignore'd (git_ignore.h): reported only with --all
};

const char* to_string(ChangeKind kind);  // "added", "modified", "deleted", "mode"
const char* to_string(EntryType type);   // "file", "dir", "symlink", "other", "none"

// The overlay's name for an opaque directory (mounted with `userxattr`).
inline constexpr const char* kOpaqueXattr = "user.overlay.opaque";

// Every change of the layer whose upper directory `upper_fd` opens, over the project `project_fd`,
// sorted by path. A deleted directory is one change (everything below it goes with it).
Result<std::vector<Change>> diff_layer(int upper_fd, int project_fd);

// Whether `change` is `selector` or lies below it ("src" selects "src/a.c"); "" selects everything.
bool selects(const std::string& selector, const std::string& path);

}  // namespace tnk::review
