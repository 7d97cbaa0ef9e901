// An ns sandbox's disk of its own (docs/ns-backend.md, "Disk"): an ext4 file system of its resources.disk,
// which tnk-disk (src/disk/) mounts on <state>/disk, so that a write past the bound fails inside with
// ENOSPC. A sandbox has one when it was made after `sudo tnk setup --user NAME --disk-allowance SIZE`;
// the directory <state>/disk is the sign, and its layers are there (state/layout.h) instead of in the
// state directory. The disk stays mounted while the host runs; after a restart the next command that
// needs the layers mounts it again.
#pragma once

#include <cstdint>
#include <filesystem>

#include "core/result.h"

namespace tnk::state {

struct NsLayers {
  std::filesystem::path upper, work, review_upper, review_work;
};

bool has_own_disk(const std::filesystem::path& state_dir);

// Where the sandbox's writable layers are: on its disk when it has one, else in the state directory.
NsLayers ns_layers(const std::filesystem::path& state_dir);

// Mounts the sandbox's disk when it has one that is not mounted, and grows it to `bytes` when that is more
// than it was mounted for (unmounted and mounted again: only while the sandbox is stopped); nothing for a
// sandbox without one.
Status mount_own_disk(const std::filesystem::path& state_dir, uint64_t bytes = 0);

// Gives a new sandbox (its state directory holds no layers yet) a fresh disk of `bytes`.
Status make_own_disk(const std::filesystem::path& state_dir, uint64_t bytes);

// Unmounts and deletes the sandbox's disk, when it has one: the first step of its delete.
Status release_own_disk(const std::filesystem::path& state_dir);

}  // namespace tnk::state
