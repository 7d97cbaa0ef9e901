// User namespaces as fds (a short-lived helper process holds each one while its maps are written) and
// detached mount trees (open_tree + mount_setattr), both made by the host-root caller before any fork.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::ns {

// "inside outside count\n" lines, as written to /proc/PID/uid_map.
std::string id_map_line(uint32_t inside, uint32_t outside, uint32_t count);

// A new user namespace with these maps, as an O_CLOEXEC fd of /proc/PID/ns/user. The helper process is
// killed once the fd is open; it is reaped here, or (when `unreaped` is given) its pid is appended there
// for the caller to reap later, so that its exit overlaps other work (it matters on a loaded machine).
Result<UniqueFd> create_userns(const std::string& uid_map, const std::string& gid_map,
                               std::vector<pid_t>* unreaped = nullptr);

// A detached bind of `path` (OPEN_TREE_CLONE, only the mount at `path`), with MOUNT_ATTR_* `attrs`
// applied and, when userns_fd >= 0, idmapped through that user namespace.
Result<UniqueFd> detached_tree(const std::filesystem::path& path, uint64_t attrs, int userns_fd = -1);

}  // namespace tnk::ns
