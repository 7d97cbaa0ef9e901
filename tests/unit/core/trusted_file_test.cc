// read_trusted_file (src/core/trusted_file.h): the files whose content steers tnk are read only when
// nobody else can have written them, and never block on a FIFO. Issue 16, item 4.
#include "core/trusted_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <utility>

#include "core/error.h"
#include "temp_dir.h"

namespace tnk {
namespace {

namespace fs = std::filesystem;
using testing_support::TempDir;

fs::path write(const fs::path& path, const std::string& content, mode_t mode) {
  std::ofstream(path) << content;
  EXPECT_EQ(::chmod(path.c_str(), mode), 0);
  return path;
}

void expect_refused(const Result<std::string>& read, const fs::path& path, const std::string& why) {
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(exit_code_for(read.error().kind), kExitPermission);
  EXPECT_NE(read.error().message.find("refusing to read manifest " + path.string()), std::string::npos)
      << read.error().message;
  EXPECT_NE(read.error().message.find(why), std::string::npos) << read.error().message;
  EXPECT_FALSE(read.error().hint.empty());
}

TEST(TrustedFile, ReadsAPrivateOrReadOnlyFile) {
  TempDir dir;
  for (mode_t mode : {0600u, 0644u, 0400u}) {
    auto read = read_trusted_file(write(dir.path() / "m.yaml", "profile: x\n", mode), "manifest");
    ASSERT_TRUE(read.ok()) << read.error().message;
    EXPECT_EQ(*read, "profile: x\n");
  }
}

TEST(TrustedFile, RefusesAFileOthersCanWrite) {
  TempDir dir;
  for (const auto& [mode, octal] : {std::pair{0666u, "0666"}, std::pair{0620u, "0620"}, std::pair{0602u, "0602"}}) {
    fs::path path = write(dir.path() / "m.yaml", "profile: x\n", mode);
    // Group-writable is refused unless the group is the owner's private one: give it a group that is not.
    if ((mode & 0020) != 0) {
      if (::geteuid() != 0) continue;  // only root can give a file another group
      ASSERT_EQ(::chown(path.c_str(), static_cast<uid_t>(-1), 4242), 0);
    }
    expect_refused(read_trusted_file(path, "manifest"), path, std::string("its mode is ") + octal);
  }
}

// Debian 13's umask 002 leaves a user's new files 0664 in the user's private group: taken, as Debian's
// OpenSSH takes them; a group with another member, or not named after the owner, is not private.
TEST(TrustedFile, AGroupWritableFileOfTheOwnersPrivateGroupIsTaken) {
  GroupFacts alice{"alice", {}, "alice", 1000};
  EXPECT_TRUE(private_group(alice, 1000));
  alice.members = {"alice"};
  EXPECT_TRUE(private_group(alice, 1000));
  GroupFacts shared = alice;
  shared.members = {"alice", "bob"};
  EXPECT_FALSE(private_group(shared, 1000));
  GroupFacts users{"users", {}, "alice", 100};
  EXPECT_FALSE(private_group(users, 100));
  EXPECT_FALSE(private_group(alice, 1001));  // not her primary group
}

TEST(TrustedFile, RefusesAnotherUsersFile) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root can give a file to another user";
  TempDir dir;
  fs::path path = write(dir.path() / "m.yaml", "profile: x\n", 0600);
  ASSERT_EQ(::chown(path.c_str(), 4242, 4242), 0);
  expect_refused(read_trusted_file(path, "manifest"), path, "owned by uid 4242, not by you (uid 0)");
}

TEST(TrustedFile, RefusesAFifoWithoutBlocking) {
  TempDir dir;
  fs::path path = dir.path() / "m.yaml";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  expect_refused(read_trusted_file(path, "manifest"), path, "not a regular file");
}

TEST(TrustedFile, FollowsALinkUnlessTheFileIsTnksOwn) {
  TempDir dir;
  write(dir.path() / "real.yaml", "profile: x\n", 0600);
  fs::create_symlink(dir.path() / "real.yaml", dir.path() / "m.yaml");
  EXPECT_TRUE(read_trusted_file(dir.path() / "m.yaml", "manifest").ok());
  expect_refused(read_trusted_file(dir.path() / "m.yaml", "manifest", LinkPolicy::kRefuse), dir.path() / "m.yaml",
                 "it is a symbolic link");
}

TEST(TrustedFile, MissingFileAndDirectoryKeepTheirErrno) {
  TempDir dir;
  auto missing = read_trusted_file(dir.path() / "none.yaml", "manifest");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().sys_errno, ENOENT);
  auto directory = read_trusted_file(dir.path(), "manifest");
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.error().sys_errno, EISDIR);
  EXPECT_NE(directory.error().message.find(dir.path().string()), std::string::npos);
}

TEST(NonRootWriter, OnlyRootsFilesInRootsDirectoriesAreRootsAlone) {
  EXPECT_EQ(non_root_writer("/bin/sh"), "");  // Debian's, in directories of root's, through /bin -> usr/bin
  TempDir dir;                                // in /tmp: sticky, so a directory root made there is still root's alone
  fs::path file = write(dir.path() / "tnk", "#!/bin/sh\n", 0755);
  if (::geteuid() == 0) {
    EXPECT_EQ(non_root_writer(file), "");
    ASSERT_EQ(::chmod(dir.path().c_str(), 0775), 0);
    EXPECT_NE(non_root_writer(file).find("writable by its group or others (mode 0775)"), std::string::npos);
    ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
    ASSERT_EQ(::chown(file.c_str(), 1000, static_cast<gid_t>(-1)), 0);
  }
  EXPECT_NE(non_root_writer(file).find("is owned by uid"), std::string::npos);
  fs::create_symlink(file, dir.path() / "link");  // judged by the file it leads to
  EXPECT_NE(non_root_writer(dir.path() / "link").find(" is owned by uid"), std::string::npos);
}

}  // namespace
}  // namespace tnk
