// The host ids of the sandboxes root runs. A rootless sandbox maps onto its user's subordinate ranges;
// one that root runs maps onto root's own ranges in /etc/subuid and /etc/subgid, which
// `sudo tnk setup --user root` reserves where none is. Without them it falls back to 100000-165535:
// the first range useradd hands out, so a user may own the same host ids (security review L5).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "idmap/subordinate_ids.h"

namespace tnk::idmap {

inline constexpr uint32_t kLegacyRootStart = 100000;

struct RootRanges {
  IdRange uids{kLegacyRootStart, kInsideIdCount};
  IdRange gids{kLegacyRootStart, kInsideIdCount};
  bool reserved = false;  // root's own lines; false: the legacy range
};

// Root's ranges in the contents of /etc/subuid and /etc/subgid, else the legacy range.
RootRanges root_ranges_in(std::string_view subuid, std::string_view subgid);

// The same, read from the files (a missing or unreadable file: the legacy range).
RootRanges root_ranges();

// The users (as the file names them) other than root whose range in `content` overlaps `range`.
std::vector<std::string> overlapping_owners(std::string_view content, IdRange range);

// "A-B".
std::string range_text(IdRange range);

}  // namespace tnk::idmap
