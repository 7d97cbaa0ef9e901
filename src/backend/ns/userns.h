// Detached mount trees (open_tree + mount_setattr), made by a host-root caller before any fork; they
// can be idmapped (only root may idmap a mount of the host's file systems).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::ns {

// Whether a bind takes the mounts below its path along (the project: the sandbox sees what the host's user
// sees there, not what lies under the host's mount points) or only the mount at the path.
enum class Submounts { kLeave, kInclude };

// A detached bind of `path` (OPEN_TREE_CLONE), with MOUNT_ATTR_* `attrs` applied (to every mount of the
// tree) and, when userns_fd >= 0, idmapped through that user namespace.
Result<UniqueFd> detached_tree(const std::filesystem::path& path, uint64_t attrs, int userns_fd = -1,
                               Submounts submounts = Submounts::kLeave);

}  // namespace tnk::ns
