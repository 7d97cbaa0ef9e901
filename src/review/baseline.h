// What the project looked like when its review layer was made: one stamp per path (inode, size,
// mtime, ctime, mode), so that apply can tell a host file that changed since from one that did not
// without reading it. Stored in the layer's baseline file (state/layout.h), NUL-separated, so any
// file name round-trips.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "core/result.h"

namespace tnk::review {

struct Stamp {
  uint64_t ino = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint32_t mode = 0;  // type and permission bits
  bool operator==(const Stamp&) const = default;
};

Stamp stamp_of(const struct stat& st);

// Project-relative path -> stamp, for every entry below the project (the top itself is "").
using Baseline = std::map<std::string, Stamp>;

// Walks the project (never following a link) and stamps every entry.
Result<Baseline> take_baseline(const std::filesystem::path& project);
// Stamps every entry below the directory `dir`, which is `rel` in the project, into `out`.
Status stamp_below(int dir, const std::string& rel, Baseline& out);
// Whether the host entry still is what the baseline says: a directory by inode and mode (its times
// change with every file made in it), anything else by every field.
bool unchanged(const Stamp& before, const Stamp& now);

std::string serialize_baseline(const Baseline& baseline);
Result<Baseline> parse_baseline(const std::string& text, const std::string& what);

// The host path `rel` below `project_fd` now: its stamp, or nullopt when it does not exist.
Result<std::optional<Stamp>> stamp_now(int project_fd, const std::string& rel);

}  // namespace tnk::review
