#include "agent/ext4_size.h"

namespace tnk::agent {
namespace {

// Offsets into the superblock (the kernel's struct ext4_super_block; all fields little-endian).
constexpr size_t kBlocksCountLo = 0x04;
constexpr size_t kLogBlockSize = 0x18;
constexpr size_t kMagicAt = 0x38;
constexpr size_t kFeatureIncompat = 0x60;
constexpr size_t kBlocksCountHi = 0x150;
constexpr uint32_t kIncompat64Bit = 0x80;
constexpr uint16_t kExt4Magic = 0xEF53;
constexpr uint64_t kBlocksPerGroup = 32768;  // at 4 KiB blocks, a 128 MiB group

uint64_t le(std::string_view bytes, size_t offset, size_t width) {
  uint64_t value = 0;
  for (size_t i = 0; i < width; ++i) value |= uint64_t{static_cast<unsigned char>(bytes[offset + i])} << (8 * i);
  return value;
}

}  // namespace

std::optional<Ext4Size> parse_ext4_superblock(std::string_view superblock) {
  if (superblock.size() < kExt4SuperblockSize || le(superblock, kMagicAt, 2) != kExt4Magic) return std::nullopt;
  uint64_t log_block_size = le(superblock, kLogBlockSize, 4);
  if (log_block_size > 6) return std::nullopt;  // 1 KiB to 64 KiB
  Ext4Size size;
  size.block_size = uint64_t{1024} << log_block_size;
  size.blocks = le(superblock, kBlocksCountLo, 4);
  if (le(superblock, kFeatureIncompat, 4) & kIncompat64Bit) size.blocks |= le(superblock, kBlocksCountHi, 4) << 32;
  return size;
}

std::optional<uint64_t> ext4_blocks_to_grow_to(const Ext4Size& fs, uint64_t device_bytes) {
  if (fs.block_size == 0) return std::nullopt;
  uint64_t device_blocks = device_bytes / fs.block_size;
  // Compared by subtraction: a damaged superblock's count near 2^64 would wrap `fs.blocks + kBlocksPerGroup`.
  if (device_blocks <= fs.blocks || device_blocks - fs.blocks < kBlocksPerGroup) return std::nullopt;
  return device_blocks;
}

}  // namespace tnk::agent
