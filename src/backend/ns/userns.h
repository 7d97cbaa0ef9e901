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

// A detached bind of `path` (OPEN_TREE_CLONE, only the mount at `path`), with MOUNT_ATTR_* `attrs`
// applied and, when userns_fd >= 0, idmapped through that user namespace.
Result<UniqueFd> detached_tree(const std::filesystem::path& path, uint64_t attrs, int userns_fd = -1);

}  // namespace tnk::ns
