// The agent's view of its root file system's size, read from the superblock of real mke2fs images.
#include "agent/ext4_size.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "core/subprocess.h"
#include "temp_dir.h"

namespace tnk::agent {
namespace {

// The superblock of a fresh `mke2fs -t ext4` image of `bytes`, with `extra` mke2fs arguments.
std::string superblock_of_new_fs(const testing_support::TempDir& dir, uint64_t bytes,
                                 std::vector<std::string> extra = {}) {
  auto image = dir.path() / "fs.img";
  std::filesystem::remove(image);
  { std::ofstream(image).close(); }
  std::filesystem::resize_file(image, bytes);
  std::vector<std::string> argv = {"mke2fs", "-q", "-F", "-t", "ext4"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back(image.string());
  ProcessOptions quiet;
  quiet.capture_stderr = true;
  auto ran = run_process(argv, quiet);
  EXPECT_TRUE(ran.ok() && ran->exit_code == 0) << (ran.ok() ? ran->err : ran.error().message);
  std::ifstream in(image, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(kExt4SuperblockOffset));
  std::string superblock(kExt4SuperblockSize, '\0');
  in.read(superblock.data(), static_cast<std::streamsize>(superblock.size()));
  return superblock;
}

TEST(AgentExt4Size, ReadsBlockSizeAndCountAsMke2fsMadeThem) {
  testing_support::TempDir dir;
  auto fs = parse_ext4_superblock(superblock_of_new_fs(dir, 256 << 20, {"-b", "4096"}));
  ASSERT_TRUE(fs.has_value());
  EXPECT_EQ(fs->block_size, 4096u);
  EXPECT_EQ(fs->blocks, (256u << 20) / 4096);

  fs = parse_ext4_superblock(superblock_of_new_fs(dir, 64 << 20, {"-b", "1024", "-O", "^64bit"}));
  ASSERT_TRUE(fs.has_value());
  EXPECT_EQ(fs->block_size, 1024u);
  EXPECT_EQ(fs->blocks, (64u << 20) / 1024);
}

TEST(AgentExt4Size, RejectsWhatIsNotAnExt4Superblock) {
  EXPECT_FALSE(parse_ext4_superblock(std::string(kExt4SuperblockSize, '\0')).has_value());
  EXPECT_FALSE(parse_ext4_superblock("short").has_value());
}

TEST(AgentExt4Size, GrowsToTheDeviceOnlyWhenAtLeastAGroupIsMissing) {
  Ext4Size base{4096, 126976};  // the size of a base disk: 496 MiB
  EXPECT_EQ(ext4_blocks_to_grow_to(base, uint64_t{8} << 30), (uint64_t{8} << 30) / 4096);
  EXPECT_FALSE(ext4_blocks_to_grow_to(base, base.blocks * 4096).has_value());          // fills its disk
  EXPECT_FALSE(ext4_blocks_to_grow_to(base, (base.blocks + 100) * 4096).has_value());  // a few blocks more
  EXPECT_FALSE(ext4_blocks_to_grow_to(base, 1 << 20).has_value());                     // a smaller disk
}

// Found with tests/fuzz/ext4_superblock (seed regression_blocks_near_2p64.bin): a block count near 2^64 (a damaged
// 64-bit superblock) wrapped the "one group more" sum, and the agent was told to "grow" to fewer blocks than the file
// system has.
TEST(AgentExt4Size, NeverGrowsToFewerBlocksThanADamagedSuperblockClaims) {
  Ext4Size huge{4096, UINT64_MAX - 100};
  EXPECT_FALSE(ext4_blocks_to_grow_to(huge, uint64_t{8} << 30).has_value());
  EXPECT_FALSE(ext4_blocks_to_grow_to(huge, UINT64_MAX).has_value());
}

}  // namespace
}  // namespace tnk::agent
