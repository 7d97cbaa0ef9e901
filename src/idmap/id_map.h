// The uid and gid maps of a rootless sandbox's user namespace, as data: written to /proc/PID/uid_map
// by root, or handed to newuidmap/newgidmap (setuid helpers that check them against /etc/subuid) by
// an ordinary user.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "idmap/subordinate_ids.h"

namespace tnk::idmap {

// The inside id that is the user's own in a rootless sandbox: `agent`.
inline constexpr uint32_t kAgentId = 1000;

struct IdMapEntry {
  uint32_t inside = 0;
  uint32_t outside = 0;
  uint32_t count = 0;
  bool operator==(const IdMapEntry&) const = default;
};
using IdMap = std::vector<IdMapEntry>;

// The sandbox's map: inside `agent_id` is the user's own id (so the agent's files in the project are
// the user's), every other inside id 0..65535 comes from `range` (inside id n -> range.start + n).
// range.start + agent_id is left unused. Root inside is never the user.
IdMap sandbox_map(IdRange range, uint32_t own_id, uint32_t agent_id);

// The owner's map: the whole range as inside 0..65535 and the user's own id as kInsideIdCount. Every
// id a rootless sandbox or image can leave on disk is mapped here, so that its mapped root can
// chown and remove any of them.
IdMap owner_map(IdRange range, uint32_t own_id);

// The map of root sessions (ns: nested in the sandbox's namespace; vm: in the guest): every id
// 0..65535 onto itself but `agent_id`, so that no capability of root acts on the agent's files.
IdMap agentless_map(uint32_t agent_id);

// The host id that inside id `inside` is; nullopt when it is not mapped.
std::optional<uint32_t> outside_id(const IdMap& map, uint32_t inside);

// "inside outside count\n" lines, one write to /proc/PID/uid_map.
std::string proc_map_text(const IdMap& map);

// newuidmap's arguments after the pid: inside, outside, count for each entry.
std::vector<std::string> helper_args(const IdMap& map);

}  // namespace tnk::idmap
