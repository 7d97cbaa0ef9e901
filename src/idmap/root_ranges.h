// The host ids of the sandboxes root runs. A rootless sandbox maps onto its user's subordinate ranges;
// one that root runs maps onto root's own ranges in /etc/subuid and /etc/subgid, which
// `sudo tnk setup --user root`, or a root start that finds none (host/root_reservation.h), reserves.
// The legacy 100000-165535 (the first range useradd hands out, so a user may own the same host ids:
// security review L5) is only what an older tnk used, and what doctor's probes see before a start.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "idmap/subordinate_ids.h"

namespace tnk::idmap {

inline constexpr uint32_t kLegacyRootStart = 100000;

// Run by root, the host processes that need no privilege (QEMU, security review H1; the relays, M6)
// run as this id of root's ranges, uid and gid alike: 65535, (uint16_t)-1, which Debian gives to no
// user or group. A sandbox's usual processes are not it; only a sandbox's root could choose it, and
// from inside its own pid namespace it sees none of these processes to signal or trace.
inline constexpr uint32_t kHelperRangeId = 65535;

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
