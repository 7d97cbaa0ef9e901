// open_dir_nofollow: the walk that audit logs are opened through (security review L6). A symbolic
// link in any parent is refused and nothing is created where it points; plain directories work.
#include "core/nofollow_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "temp_dir.h"

namespace tnk {
namespace {

namespace fs = std::filesystem;
using testing_support::TempDir;

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

bool same_dir(int fd, const fs::path& p) {
  struct stat a {
  }, b{};
  return ::fstat(fd, &a) == 0 && ::stat(p.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

TEST(OpenDirNofollowTest, OpensAPlainDirectory) {
  TempDir tmp;
  fs::create_directories(tmp.path() / "a" / "b");
  auto fd = open_dir_nofollow(tmp.path() / "a" / "b");
  ASSERT_TRUE(fd.ok()) << fd.error().message;
  EXPECT_TRUE(same_dir(fd->get(), tmp.path() / "a" / "b"));
  auto dotted = open_dir_nofollow(tmp.path() / "a" / "." / "x" / ".." / "b" / "");
  ASSERT_TRUE(dotted.ok()) << dotted.error().message;
  EXPECT_TRUE(same_dir(dotted->get(), tmp.path() / "a" / "b"));
}

TEST(OpenDirNofollowTest, CreatesMissingDirectoriesWithTheMode) {
  TempDir tmp;
  mode_t old = ::umask(022);
  auto fd = open_dir_nofollow(tmp.path() / "new" / "deeper", 0700);
  ::umask(old);
  ASSERT_TRUE(fd.ok()) << fd.error().message;
  EXPECT_EQ(mode_of(tmp.path() / "new"), 0700u);
  EXPECT_TRUE(same_dir(fd->get(), tmp.path() / "new" / "deeper"));
}

TEST(OpenDirNofollowTest, MissingWithoutCreateIsNotFound) {
  TempDir tmp;
  auto fd = open_dir_nofollow(tmp.path() / "missing");
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().kind, ErrorKind::kNotFound);
  EXPECT_FALSE(fs::exists(tmp.path() / "missing"));
}

TEST(OpenDirNofollowTest, RefusesASymlinkedParentAndCreatesNothingBehindIt) {
  TempDir tmp;
  fs::create_directories(tmp.path() / "elsewhere");
  fs::create_directory_symlink(tmp.path() / "elsewhere", tmp.path() / "logs");
  for (auto create : {std::optional<mode_t>(), std::optional<mode_t>(0700)}) {
    auto fd = open_dir_nofollow(tmp.path() / "logs" / "sub", create);
    ASSERT_FALSE(fd.ok());
    EXPECT_EQ(fd.error().kind, ErrorKind::kPermission);
    EXPECT_EQ(fd.error().message, "refusing to follow " + (tmp.path() / "logs").string() + ": it is a symbolic link");
  }
  EXPECT_TRUE(fs::is_empty(tmp.path() / "elsewhere"));
}

TEST(OpenDirNofollowTest, RefusesASymlinkAsTheDirectoryItselfAndAFileInTheWay) {
  TempDir tmp;
  fs::create_directories(tmp.path() / "real");
  fs::create_directory_symlink(tmp.path() / "real", tmp.path() / "link");
  auto link = open_dir_nofollow(tmp.path() / "link");
  ASSERT_FALSE(link.ok());
  EXPECT_EQ(link.error().kind, ErrorKind::kPermission);
  {
    std::FILE* f = std::fopen((tmp.path() / "file").c_str(), "w");
    std::fclose(f);
  }
  auto file = open_dir_nofollow(tmp.path() / "file" / "x", 0700);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().message, (tmp.path() / "file").string() + " exists and is not a directory");
}

TEST(OpenDirNofollowTest, RefusesARelativePath) { EXPECT_FALSE(open_dir_nofollow("relative/dir").ok()); }

}  // namespace
}  // namespace tnk
