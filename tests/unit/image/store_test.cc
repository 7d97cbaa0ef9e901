// The image cache without building anything: listing fake image directories, unusable ones,
// removal (and its refusal while sandboxes use the image), stale work directories, which sandboxes
// use which image, and the mount-safe tree walk.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/file_lock.h"
#include "core/files.h"
#include "image/layout.h"
#include "image/store.h"
#include "image/tree.h"
#include "image/users.h"
#include "state/store.h"

namespace tnk::image {
namespace {
namespace fs = std::filesystem;

class ImageStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tnk-image-store-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    paths_.home = root_;
    paths_.config_dir = root_ / "config";
    paths_.state_dir = root_ / "state";
    paths_.cache_dir = root_ / "cache";
    ASSERT_TRUE(make_dirs(paths_.images_dir()).ok());
  }
  void TearDown() override { fs::remove_all(root_); }

  // A directory that looks like a finished image.
  void fake_image(const std::string& id, int64_t built_at = 1700000000) {
    fs::path dir = paths_.images_dir() / id;
    ASSERT_TRUE(make_dirs(dir / kRootfsDir / "etc").ok());
    ASSERT_TRUE(write_file_atomic(dir / kRootfsDir / "etc" / "hostname", "sandbox\n").ok());
    ImageInfo info;
    info.id = id;
    info.size_bytes = 1234;
    info.inodes = 3;
    info.built_at = built_at;
    info.build_seconds = 51.8;
    info.recipe = {{"suite", "bookworm"}};
    info.recipe_hash = std::string(64, 'a');
    info.mmdebstrap_version = "1.3.5";
    ASSERT_TRUE(write_file_atomic(dir / kImageJsonFile, image_info_to_json(info).dump()).ok());
  }
  void touch(const fs::path& path) { ASSERT_TRUE(write_file_atomic(path, "x").ok()); }

  fs::path root_;
  Paths paths_;
  std::ostringstream err_;
  Log log_{err_, Verbosity::kVerbose};
};

// An image whose root files belong to another host uid than root inside is (an older tnk's layout, which
// left root unable to write /var/lib inside) is refused, naming both uids; the same tree passes for
// its owner.
TEST_F(ImageStoreTest, AnImageWhoseRootFilesAreNotRootsInsideIsNotUsable) {
  fake_image("debian-x");
  fs::path rootfs = paths_.images_dir() / "debian-x" / kRootfsDir;
  EXPECT_TRUE(check_root_owner(rootfs, ::getuid()).ok());
  Status stale = check_root_owner(rootfs, ::getuid() + 100000);
  ASSERT_FALSE(stale.ok());
  EXPECT_NE(stale.error().message.find("image debian-x is not usable: its root's files belong to host uid " +
                                       std::to_string(::getuid())),
            std::string::npos)
      << stale.error().message;
  EXPECT_NE(stale.error().hint.find("tnk image build --force"), std::string::npos);
}

TEST_F(ImageStoreTest, EmptyOrMissingCacheListsNothing) {
  auto listed = list_images(paths_);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
  fs::remove_all(paths_.images_dir());
  listed = list_images(paths_);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
}

TEST_F(ImageStoreTest, ListsImagesSortedSkipsWorkFilesAndReportsUnusableOnes) {
  fake_image("debian-bookworm-bbbbbbbbbbbb");
  fake_image("debian-bookworm-aaaaaaaaaaaa");
  ASSERT_TRUE(make_dirs(paths_.images_dir() / "debian-bookworm-cccccccccccc" / kRootfsDir).ok());  // no image.json
  fake_image("debian-bookworm-dddddddddddd");
  touch(paths_.images_dir() / "debian-bookworm-dddddddddddd" / kImageJsonFile);  // not JSON
  ASSERT_TRUE(make_dirs(paths_.images_dir() / ".build-debian-bookworm-eeeeeeeeeeee-42" / kRootfsDir).ok());
  touch(paths_.images_dir() / "debian-bookworm-aaaaaaaaaaaa.lock");
  touch(paths_.images_dir() / "debian-bookworm-aaaaaaaaaaaa.build.log");

  auto listed = list_images(paths_);
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  ASSERT_EQ(listed->size(), 4u);
  const auto& a = (*listed)[0];
  EXPECT_EQ(a.id, "debian-bookworm-aaaaaaaaaaaa");
  EXPECT_EQ(a.problem, "");
  EXPECT_EQ(a.size_bytes, 1234u);
  EXPECT_EQ(a.inodes, 3u);
  EXPECT_EQ(a.built_at, 1700000000);
  EXPECT_DOUBLE_EQ(a.build_seconds, 51.8);
  EXPECT_EQ(a.mmdebstrap_version, "1.3.5");
  EXPECT_EQ(a.rootfs, paths_.images_dir() / "debian-bookworm-aaaaaaaaaaaa" / "rootfs");
  EXPECT_EQ((*listed)[1].id, "debian-bookworm-bbbbbbbbbbbb");
  EXPECT_NE((*listed)[2].problem.find("image.json"), std::string::npos) << (*listed)[2].problem;
  EXPECT_NE((*listed)[3].problem.find("malformed"), std::string::npos) << (*listed)[3].problem;
}

TEST_F(ImageStoreTest, ImageJsonWithABadFieldNamesTheFieldAndTheFile) {
  const std::string id = "debian-bookworm-aaaaaaaaaaaa";
  fake_image(id);
  fs::path file = paths_.images_dir() / id / kImageJsonFile;
  auto doc = nlohmann::json::parse(*read_file(file));
  doc["inodes"] = "three";
  ASSERT_TRUE(write_file_atomic(file, doc.dump()).ok());
  auto found = find_image(paths_, id);
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.error().message,
            "image " + id + " is not usable: " + file.string() + ": field 'inodes' must be an integer of 0 or more");
  EXPECT_NE(found.error().hint.find("tnk image rm " + id), std::string::npos);
}

TEST_F(ImageStoreTest, FindImage) {
  fake_image("debian-bookworm-aaaaaaaaaaaa");
  auto found = find_image(paths_, "debian-bookworm-aaaaaaaaaaaa");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->recipe_hash, std::string(64, 'a'));
  auto absent = find_image(paths_, "debian-bookworm-000000000000");
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.error().kind, ErrorKind::kNotFound);
  for (const char* bad : {"../etc", ".build-x-1", "UPPER", "a/b", ""}) {
    auto refused = find_image(paths_, bad);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.error().kind, ErrorKind::kUsage) << bad;
  }
  // An image.json that names another image is not this image.
  fake_image("debian-bookworm-ffffffffffff");
  fs::rename(paths_.images_dir() / "debian-bookworm-ffffffffffff",
             paths_.images_dir() / "debian-bookworm-999999999999");
  auto moved = find_image(paths_, "debian-bookworm-999999999999");
  ASSERT_FALSE(moved.ok());
  EXPECT_EQ(moved.error().kind, ErrorKind::kFailed);
  EXPECT_NE(moved.error().hint.find("tnk image rm"), std::string::npos);
}

TEST_F(ImageStoreTest, RemoveRefusesAnImageInUseUnlessForced) {
  const std::string id = "debian-bookworm-aaaaaaaaaaaa";
  fake_image(id);
  touch(paths_.images_dir() / (id + ".build.log"));
  auto refused = remove_image(paths_, id, {"tnk-one", "tnk-two"});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kFailed);
  EXPECT_NE(refused.error().message.find("tnk-one, tnk-two"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().hint.find("--force"), std::string::npos);
  EXPECT_TRUE(fs::exists(paths_.images_dir() / id / kImageJsonFile));

  ASSERT_TRUE(remove_image(paths_, id, {"tnk-one"}, true).ok());
  EXPECT_FALSE(fs::exists(paths_.images_dir() / id));
  EXPECT_FALSE(fs::exists(paths_.images_dir() / (id + ".build.log")));
  EXPECT_FALSE(fs::exists(paths_.images_dir() / (id + ".lock")));
  EXPECT_TRUE(fs::is_empty(paths_.images_dir()));  // no .rm-* left either
}

TEST_F(ImageStoreTest, RemoveAnUnusableImageAndAMissingOne) {
  ASSERT_TRUE(make_dirs(paths_.images_dir() / "debian-bookworm-cccccccccccc" / kRootfsDir).ok());
  EXPECT_TRUE(remove_image(paths_, "debian-bookworm-cccccccccccc").ok());
  auto missing = remove_image(paths_, "debian-bookworm-cccccccccccc");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::kNotFound);
}

TEST_F(ImageStoreTest, StaleWorkDirsOfDeadOwnersAreRemovedLiveOnesKept) {
  auto images = paths_.images_dir();
  for (const char* dir : {".build-debian-bookworm-aaaaaaaaaaaa-111", ".build-debian-bookworm-bbbbbbbbbbbb-222",
                          ".rm-debian-bookworm-cccccccccccc-333", ".build-debian-bookworm-dddddddddddd-444",
                          ".build-notapid-x", ".other"}) {
    ASSERT_TRUE(make_dirs(images / dir / "rootfs" / "usr").ok());
    touch(images / dir / "rootfs" / "usr" / "file");
  }
  // b's builder is alive (holds its lock); d's lock is held by the caller itself.
  auto b_lock = FileLock::acquire(images / "debian-bookworm-bbbbbbbbbbbb.lock", std::chrono::seconds(1));
  ASSERT_TRUE(b_lock.ok());
  auto d_lock = FileLock::acquire(images / "debian-bookworm-dddddddddddd.lock", std::chrono::seconds(1));
  ASSERT_TRUE(d_lock.ok());

  remove_stale_work_dirs(paths_, log_, "debian-bookworm-dddddddddddd");
  EXPECT_FALSE(fs::exists(images / ".build-debian-bookworm-aaaaaaaaaaaa-111"));
  EXPECT_TRUE(fs::exists(images / ".build-debian-bookworm-bbbbbbbbbbbb-222"));
  EXPECT_FALSE(fs::exists(images / ".rm-debian-bookworm-cccccccccccc-333"));
  EXPECT_FALSE(fs::exists(images / ".build-debian-bookworm-dddddddddddd-444"));
  EXPECT_TRUE(fs::exists(images / ".build-notapid-x"));  // not a name we make: not ours to remove
  EXPECT_TRUE(fs::exists(images / ".other"));
  EXPECT_FALSE(fs::exists(images / "debian-bookworm-aaaaaaaaaaaa.lock"));  // no image: no lock litter
}

TEST_F(ImageStoreTest, ImageUsersFromSandboxRecords) {
  state::Store store(paths_.sandboxes_dir());
  for (auto [id, image] : {std::pair{"tnk-a", "debian-bookworm-aaaaaaaaaaaa"},
                           std::pair{"tnk-b", "debian-bookworm-aaaaaaaaaaaa"}, std::pair{"tnk-c", ""}}) {
    state::SandboxRecord r;
    r.id = id;
    r.backend = BackendKind::kNs;
    r.project_dir = "/p";
    r.profile = "base";
    r.mount_point = "/workspace";
    r.image_id = image;
    ASSERT_TRUE(store.save(r).ok());
  }
  auto users = image_users(paths_);
  ASSERT_TRUE(users.ok()) << users.error().message;
  EXPECT_EQ(users->users_of("debian-bookworm-aaaaaaaaaaaa"), (std::vector<std::string>{"tnk-a", "tnk-b"}));
  EXPECT_TRUE(users->users_of("debian-bookworm-bbbbbbbbbbbb").empty());

  ASSERT_TRUE(make_dirs(store.dir("tnk-d")).ok());
  touch(store.file("tnk-d", "sandbox.json"));  // unreadable: it may use any image
  users = image_users(paths_);
  ASSERT_TRUE(users.ok());
  EXPECT_EQ(users->users_of("debian-bookworm-bbbbbbbbbbbb"), (std::vector<std::string>{"tnk-d (unreadable record)"}));
}

TEST_F(ImageStoreTest, MeasureCountsHardLinksOnceAndFollowsNoLink) {
  fs::path tree = root_ / "tree";
  ASSERT_TRUE(make_dirs(tree / "d").ok());
  ASSERT_TRUE(write_file_atomic(tree / "d" / "f", std::string(1000, 'x')).ok());
  fs::create_hard_link(tree / "d" / "f", tree / "f2");
  fs::create_symlink("/usr", tree / "link");
  auto size = measure_tree(tree);
  ASSERT_TRUE(size.ok()) << size.error().message;
  EXPECT_EQ(size->inodes, 4u);  // tree, d, f (twice linked), link
  uint64_t dirs = fs::file_size(tree / "d" / "f") + 4 /* "/usr" */;
  EXPECT_GE(size->bytes, dirs);
  EXPECT_LT(size->bytes, dirs + 3 * 65536);
}

TEST_F(ImageStoreTest, RemoveTreeFollowsNoLinkAndRefusesMountPoints) {
  fs::path outside = root_ / "outside";
  ASSERT_TRUE(make_dirs(outside).ok());
  touch(outside / "keep");
  fs::path tree = root_ / "tree";
  ASSERT_TRUE(make_dirs(tree / "a" / "b").ok());
  fs::create_directory_symlink(outside, tree / "a" / "to-outside");
  ASSERT_TRUE(make_dirs(tree / "mnt").ok());
  bool mounted = ::mount("tmpfs", (tree / "mnt").c_str(), "tmpfs", 0, "size=1m") == 0;
  if (mounted) {
    touch(tree / "mnt" / "inside-the-mount");
    auto refused = remove_tree(tree);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("mount point"), std::string::npos) << refused.error().message;
    EXPECT_TRUE(fs::exists(tree / "mnt" / "inside-the-mount"));
    ASSERT_EQ(::umount2((tree / "mnt").c_str(), MNT_DETACH), 0);
  }
  ASSERT_TRUE(remove_tree(tree).ok());
  EXPECT_FALSE(fs::exists(tree));
  EXPECT_TRUE(fs::exists(outside / "keep"));
  EXPECT_TRUE(remove_tree(tree).ok());  // missing: nothing to do
  if (!mounted) GTEST_SKIP() << "mount(tmpfs) not permitted (needs root): the mount-point refusal was not tested";
}

}  // namespace
}  // namespace tnk::image
