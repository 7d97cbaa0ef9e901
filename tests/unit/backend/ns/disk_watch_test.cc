// The disk watch's walk and schedule on real files in a temporary directory.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "backend/ns/disk_watch.h"
#include "temp_dir.h"

namespace tnk::ns {
namespace {

namespace fs = std::filesystem;
using testing_support::TempDir;

// Writes `bytes` of data (allocated: not a sparse file) and returns what the file takes.
uint64_t write_file(const fs::path& path, size_t bytes) {
  std::ofstream(path, std::ios::binary) << std::string(bytes, 'x');
  struct stat st {};
  ::stat(path.c_str(), &st);
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

// tree_bytes() of `dir`, opened as the watch's caller opens it.
Result<uint64_t> measure(const fs::path& dir, uint64_t stop_above = UINT64_MAX) {
  UniqueFd fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return sys_error(errno, "opening " + dir.string());
  return tree_bytes(fd.get(), dir.string(), stop_above);
}

uint64_t own_blocks(const fs::path& path) {
  struct stat st {};
  ::lstat(path.c_str(), &st);
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

TEST(DiskWatchTest, CountsFilesAndDirectoriesOnceEachThroughHardLinks) {
  TempDir dir;
  fs::create_directories(dir.path() / "a" / "b");
  uint64_t file = write_file(dir.path() / "a" / "b" / "data", 1 << 20);
  ASSERT_GE(file, 1u << 20);
  fs::create_hard_link(dir.path() / "a" / "b" / "data", dir.path() / "a" / "again");
  uint64_t dirs = own_blocks(dir.path()) + own_blocks(dir.path() / "a") + own_blocks(dir.path() / "a" / "b");
  auto bytes = measure(dir.path());
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  EXPECT_EQ(*bytes, file + dirs);
}

TEST(DiskWatchTest, NeitherFollowsSymbolicLinksNorCountsWhatTheyPointAt) {
  TempDir outside, dir;
  write_file(outside.path() / "big", 4 << 20);
  fs::create_symlink(outside.path(), dir.path() / "to-dir");
  fs::create_symlink(outside.path() / "big", dir.path() / "to-file");
  auto bytes = measure(dir.path());
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  EXPECT_LT(*bytes, 1u << 20);
  // The control: the same file inside counts.
  write_file(dir.path() / "big", 4 << 20);
  EXPECT_GE(*measure(dir.path()), 4u << 20);
}

TEST(DiskWatchTest, StopsOnceTheTotalPassesTheBound) {
  TempDir dir;
  for (int i = 0; i < 8; ++i) write_file(dir.path() / std::to_string(i), 1 << 20);
  auto all = measure(dir.path());
  auto some = measure(dir.path(), 2 << 20);
  ASSERT_TRUE(all.ok() && some.ok());
  EXPECT_GE(*all, 8u << 20);
  EXPECT_GT(*some, 2u << 20);
  EXPECT_LT(*some, 4u << 20);
}

TEST(DiskWatchTest, ADirectoryThatIsNotThereIsAnErrorNamingIt) {
  TempDir dir;
  auto bytes = measure(dir.path() / "gone");
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.error().message.find("gone"), std::string::npos) << bytes.error().message;
  // A symbolic link where the directory should be is not followed either.
  fs::create_symlink(dir.path(), dir.path() / "link");
  EXPECT_FALSE(measure(dir.path() / "link").ok());
}

TEST(DiskWatchTest, WalksAgainOnceTheHostsFreeSpaceFellByHalfTheHeadroom) {
  constexpr uint64_t kGiB = 1ull << 30;
  const uint64_t free_then = 50 * kGiB;
  // 8 GiB allowed, 6 used: a fall of 1 GiB is half the headroom.
  EXPECT_FALSE(should_measure(free_then, free_then, 6 * kGiB, 8 * kGiB));
  EXPECT_FALSE(should_measure(free_then, free_then - kGiB + 1, 6 * kGiB, 8 * kGiB));
  EXPECT_TRUE(should_measure(free_then, free_then - kGiB, 6 * kGiB, 8 * kGiB));
  // Space freed on the host is no reason; a sandbox at its limit is measured at every look.
  EXPECT_FALSE(should_measure(free_then, free_then + kGiB, 6 * kGiB, 8 * kGiB));
  EXPECT_TRUE(should_measure(free_then, free_then, 8 * kGiB, 8 * kGiB));
  // Near the limit, small falls wait for kFallTrigger.
  EXPECT_FALSE(should_measure(free_then, free_then - kFallTrigger + 1, 8 * kGiB - 1024, 8 * kGiB));
  EXPECT_TRUE(should_measure(free_then, free_then - kFallTrigger, 8 * kGiB - 1024, 8 * kGiB));
}

}  // namespace
}  // namespace tnk::ns
