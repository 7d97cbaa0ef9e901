// How big the guest's root ext4 is, from its superblock, and how many blocks it should have on its disk.
// The base disk's file system is only as big as the image; a sandbox's overlay is as big as its
// manifest's resources.disk, and the agent grows the file system to it at boot (online, see
// guest/grow_root.cc). Pure functions, so the host tests them on a real mke2fs image.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tnk::agent {

inline constexpr uint64_t kExt4SuperblockOffset = 1024;  // from the start of the device
inline constexpr size_t kExt4SuperblockSize = 1024;

struct Ext4Size {
  uint64_t block_size = 0;
  uint64_t blocks = 0;
};

// The block size and count of an ext2/3/4 superblock (the kExt4SuperblockSize bytes at
// kExt4SuperblockOffset); nullopt when `superblock` is not one.
std::optional<Ext4Size> parse_ext4_superblock(std::string_view superblock);

// The block count to grow to on a device of `device_bytes`, or nullopt when the file system already
// fills it (less than one block group of 32768 blocks is left alone: not worth a resize).
std::optional<uint64_t> ext4_blocks_to_grow_to(const Ext4Size& fs, uint64_t device_bytes);

}  // namespace tnk::agent
