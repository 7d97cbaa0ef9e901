// libFuzzer target for the guest's root-grow decision (guest/grow_root.cc): the input is the head of
// the root device, its superblock read at kExt4SuperblockOffset as the agent reads it; the 8 bytes after
// the superblock, when present, are the device's size (little-endian), 8 GiB otherwise.
// Build and run: scripts/fuzz.sh SECONDS ext4_superblock (tests/fuzz/CMakeLists.txt builds it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "agent/ext4_size.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tnk::agent;
  std::string_view device(reinterpret_cast<const char*>(data), size);
  if (device.size() < kExt4SuperblockOffset) return 0;
  std::string_view superblock = device.substr(kExt4SuperblockOffset, kExt4SuperblockSize);
  uint64_t device_bytes = uint64_t{8} << 30;
  constexpr size_t kSizeAt = kExt4SuperblockOffset + kExt4SuperblockSize;
  if (device.size() >= kSizeAt + 8) {
    device_bytes = 0;
    for (size_t i = 0; i < 8; ++i) device_bytes |= uint64_t{data[kSizeAt + i]} << (8 * i);
  }
  auto fs = parse_ext4_superblock(superblock);
  if (!fs) return 0;
  if (fs->block_size < 1024 || fs->block_size > 65536 || (fs->block_size & (fs->block_size - 1)) != 0) std::abort();
  auto target = ext4_blocks_to_grow_to(*fs, device_bytes);
  // Growing never shrinks the file system, and never past the end of its device.
  if (target && (*target <= fs->blocks || *target > device_bytes / fs->block_size)) std::abort();
  return 0;
}
