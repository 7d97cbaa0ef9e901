// Base disks and overlays: the pure command lines, then a real base disk made from a small tree with
// owners, modes, links and a merged /usr, looked at from outside with debugfs (owners and modes as in
// the tree, the agent at /sbin/tnk-agent as root:root 0755, the file read-only, the tree untouched),
// and a qcow2 overlay on it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iostream>

#include "backend/vm/boot/boot_files_store.h"
#include "backend/vm/boot/disk.h"
#include "core/files.h"
#include "core/subprocess.h"
#include "image/tree.h"
#include "temp_dir.h"

namespace tnk::vm::boot {
namespace {

namespace fs = std::filesystem;

TEST(DiskPlan, GoldenCommandLines) {
  EXPECT_EQ(disk_id("debian-bookworm-0123456789ab", "ffeeddccbbaa99887766"),
            "debian-bookworm-0123456789ab-agent-ffeeddccbbaa");
  EXPECT_EQ(mke2fs_argv("/c/images/x/rootfs", "/c/disks/.build-y-1/base.img"),
            (std::vector<std::string>{"mke2fs", "-q", "-F", "-t", "ext4", "-T", "default", "-b", "4096", "-m", "1",
                                      "-L", "tnk-root", "-E", "root_owner=0:0", "-d", "/c/images/x/rootfs",
                                      "/c/disks/.build-y-1/base.img"}));
  EXPECT_EQ(overlay_argv("/c/disks/d/base.img", "/s/sb/disk.qcow2", 0),
            (std::vector<std::string>{"qemu-img", "create", "-q", "-f", "qcow2", "-b", "/c/disks/d/base.img", "-F",
                                      "raw", "/s/sb/disk.qcow2"}));
  EXPECT_EQ(overlay_argv("/b", "/o", 1 << 30).back(), "1073741824");
  auto script = debugfs_agent_script("/opt/tnk/bin/tnk-agent", "/usr/sbin");
  ASSERT_TRUE(script.ok());
  EXPECT_EQ(*script,
            "cd \"/usr/sbin\"\nwrite \"/opt/tnk/bin/tnk-agent\" tnk-agent\nsif tnk-agent mode 0100755\n"
            "sif tnk-agent uid 0\nsif tnk-agent gid 0\n");
  EXPECT_FALSE(debugfs_agent_script("/a\"b", "/sbin").ok());
}

TEST(DiskPlan, SizeHasHeadroomAndIsWholeMebibytes) {
  uint64_t size = base_disk_size(177'000'000, 6000);
  EXPECT_EQ(size % (1024 * 1024), 0u);
  EXPECT_GT(size, 177'000'000u + 6000u * 4096u);
  EXPECT_LT(size, 800'000'000u);
}

bool have(const char* program) {
  ProcessOptions quiet;
  quiet.capture_stdout = quiet.capture_stderr = true;
  auto r = run_process({program, "-V"}, quiet);
  return r.ok();
}

std::string debugfs_stat(const fs::path& image, const std::string& path) {
  ProcessOptions o;
  o.capture_stdout = o.capture_stderr = true;
  auto r = run_process({"debugfs", "-R", "stat " + path, image.string()}, o);
  return r.ok() ? r->out + r->err : "";
}

void write(const fs::path& p, const std::string& text, mode_t mode, uid_t uid = 0, gid_t gid = 0) {
  std::ofstream(p) << text;
  ASSERT_EQ(::lchown(p.c_str(), uid, gid), 0);  // before chmod: chown clears set-id bits
  ASSERT_EQ(::chmod(p.c_str(), mode), 0);
}

class DiskBuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "SKIPPED LOUDLY: needs root to give the test tree other owners";
    for (const char* tool : {"mke2fs", "debugfs"}) {
      if (!have(tool)) GTEST_SKIP() << "SKIPPED LOUDLY: " << tool << " is missing (apt-get install e2fsprogs)";
    }
    paths_.home = dir_.path();
    paths_.cache_dir = dir_.path() / "cache";
    tree_ = dir_.path() / "rootfs";
    for (const char* d : {"usr/sbin", "usr/bin", "home/agent", "tmp", "etc"}) ASSERT_TRUE(make_dirs(tree_ / d).ok());
    fs::create_symlink("usr/sbin", tree_ / "sbin");
    fs::create_symlink("usr/bin", tree_ / "bin");
    ASSERT_EQ(::chmod((tree_ / "tmp").c_str(), 01777), 0);
    ASSERT_EQ(::chown((tree_ / "home/agent").c_str(), 1000, 1000), 0);
    ASSERT_EQ(::chmod((tree_ / "home/agent").c_str(), 0750), 0);
    write(tree_ / "home/agent/.profile", "PATH=/usr/bin\n", 0640, 1000, 1000);
    write(tree_ / "usr/bin/sudo", "not really sudo\n", 04755);
    write(tree_ / "etc/shadow", "root:*:1::::::\n", 0640, 0, 42);
    fs::create_hard_link(tree_ / "usr/bin/sudo", tree_ / "usr/bin/sudoedit");
    agent_ = dir_.path() / "tnk-agent";
    write(agent_, std::string(100000, 'a'), 0700, 1234, 1234);
    auto size = image::measure_tree(tree_);
    ASSERT_TRUE(size.ok());
    image_.id = "debian-bookworm-0123456789ab";
    image_.rootfs = tree_;
    image_.size_bytes = size->bytes;
    image_.inodes = size->inodes;
  }
  testing_support::TempDir dir_{"tnk-disk-test"};
  Paths paths_;
  fs::path tree_, agent_;
  image::ImageInfo image_;
};

TEST_F(DiskBuildTest, BaseDiskKeepsOwnersModesAndLinksAndAddsTheAgent) {
  Log log(std::cerr);
  auto tree_before = image::measure_tree(tree_);
  auto disk = ensure_disk(paths_, image_, agent_, log);
  ASSERT_TRUE(disk.ok()) << disk.error().message;
  auto sha = file_sha256(agent_);
  ASSERT_TRUE(sha.ok());
  EXPECT_EQ(disk->id, disk_id(image_.id, *sha));
  EXPECT_EQ(disk->image_id, image_.id);
  struct stat st {};
  ASSERT_EQ(::stat(disk->base.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0444u);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), disk->size_bytes);
  EXPECT_LT(disk->allocated_bytes, disk->size_bytes);  // sparse

  auto profile = debugfs_stat(disk->base, "/home/agent/.profile");
  EXPECT_NE(profile.find("Mode:  0640"), std::string::npos) << profile;
  EXPECT_NE(profile.find("User:  1000   Group:  1000"), std::string::npos) << profile;
  EXPECT_NE(debugfs_stat(disk->base, "/home/agent").find("Mode:  0750"), std::string::npos);
  EXPECT_NE(debugfs_stat(disk->base, "/tmp").find("Mode:  01777"), std::string::npos);
  auto sudo = debugfs_stat(disk->base, "/usr/bin/sudo");
  EXPECT_NE(sudo.find("Mode:  04755"), std::string::npos) << sudo;
  EXPECT_NE(sudo.find("Links: 2"), std::string::npos) << sudo;
  EXPECT_NE(debugfs_stat(disk->base, "/etc/shadow").find("User:     0   Group:    42"), std::string::npos);
  EXPECT_NE(debugfs_stat(disk->base, "/sbin").find("Type: symlink"), std::string::npos);
  auto agent = debugfs_stat(disk->base, "/usr/sbin/tnk-agent");  // /sbin/tnk-agent through the link
  EXPECT_NE(agent.find("Type: regular"), std::string::npos) << agent;
  EXPECT_NE(agent.find("Mode:  0755"), std::string::npos) << agent;
  EXPECT_NE(agent.find("User:     0   Group:     0"), std::string::npos) << agent;
  EXPECT_NE(agent.find("Size: 100000"), std::string::npos) << agent;

  EXPECT_FALSE(fs::exists(tree_ / "usr/sbin/tnk-agent"));  // the shared tree is never changed
  EXPECT_EQ(image::measure_tree(tree_)->bytes, tree_before->bytes);

  // Present: returned as is, not rebuilt.
  auto again = ensure_disk(paths_, image_, agent_, log);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->built_at, disk->built_at);
  EXPECT_EQ(list_disks(paths_)->size(), 1u);
  // Another agent is another disk.
  write(agent_, "other agent", 0755);
  auto other = ensure_disk(paths_, image_, agent_, log);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->id, disk->id);
  EXPECT_EQ(list_disks(paths_)->size(), 2u);
}

TEST_F(DiskBuildTest, OverlayOnAPinnedLinkToTheBase) {
  if (!have("qemu-img")) GTEST_SKIP() << "SKIPPED LOUDLY: qemu-img is missing (apt-get install qemu-utils)";
  Log log(std::cerr);
  auto disk = ensure_disk(paths_, image_, agent_, log);
  ASSERT_TRUE(disk.ok()) << disk.error().message;
  auto overlay = dir_.path() / "disk.qcow2";
  auto pinned = dir_.path() / "base.img";
  ASSERT_TRUE(create_overlay(disk->base, pinned, overlay, 2ull << 30).ok());
  struct stat st {};
  ASSERT_EQ(::stat(overlay.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ProcessOptions o;
  o.capture_stdout = true;
  auto info = run_process({"qemu-img", "info", "--output=json", overlay.string()}, o);
  ASSERT_TRUE(info.ok());
  auto doc = nlohmann::json::parse(info->out);
  EXPECT_EQ(doc["virtual-size"], 2ull << 30);
  EXPECT_EQ(doc["backing-filename"], pinned.string());
  EXPECT_EQ(doc["backing-filename-format"], "raw");
  // The pin is the cache's file (a link), so removing the cache's name leaves the overlay's backing.
  struct stat base_st {
  }, pinned_st{};
  ASSERT_EQ(::stat(disk->base.c_str(), &base_st), 0);
  ASSERT_EQ(::stat(pinned.c_str(), &pinned_st), 0);
  EXPECT_EQ(base_st.st_ino, pinned_st.st_ino);
  ASSERT_TRUE(std::filesystem::remove(disk->base));
  EXPECT_TRUE(std::filesystem::exists(pinned));
  EXPECT_FALSE(create_overlay(disk->base, pinned, overlay, 0).ok());  // never over an existing overlay
}

TEST_F(DiskBuildTest, MissingAgentIsNotFound) {
  Log log(std::cerr);
  auto disk = ensure_disk(paths_, image_, dir_.path() / "no-agent", log);
  ASSERT_FALSE(disk.ok());
  EXPECT_EQ(disk.error().kind, ErrorKind::kNotFound);
  EXPECT_NE(disk.error().hint.find("tnk-agent"), std::string::npos);
}

}  // namespace
}  // namespace tnk::vm::boot
