#include "disk/rules.h"

#include <gtest/gtest.h>

namespace tnk::disk {
namespace {

TEST(DiskRules, KeysAreSandboxIdsAndNothingThatLeavesTheDirectory) {
  EXPECT_TRUE(valid_key("tnk-demo-1a2b3c"));
  EXPECT_TRUE(valid_key("demo.1"));
  for (const char* bad : {"", "../x", "a/b", "a..b", ".hidden", "-x", "A", "a b", "a\n"}) {
    EXPECT_FALSE(valid_key(bad)) << bad;
  }
  EXPECT_FALSE(valid_key(std::string(101, 'a')));
}

TEST(DiskRules, BytesAreDecimalDigitsOnly) {
  EXPECT_EQ(parse_bytes("100663296"), 100663296u);
  for (const char* bad : {"", "-1", "+5", "1e9", "96MiB", " 5", "99999999999999999999"}) {
    EXPECT_EQ(parse_bytes(bad), std::nullopt) << bad;
  }
}

TEST(DiskRules, TheAllowanceIsTheUsersLastLineAndCommentsAreNotLines) {
  const char* conf = "# alice 1\nalice 5\nbob 7 # more\nalicia 9\nalice 6\nbad line\n";
  EXPECT_EQ(allowance_for(conf, "alice"), 6u);
  EXPECT_EQ(allowance_for(conf, "bob"), 7u);
  EXPECT_EQ(allowance_for(conf, "carol"), std::nullopt);
  EXPECT_EQ(allowance_for(conf, "ali"), std::nullopt);
  EXPECT_EQ(with_allowance(conf, "alice", 8), "# alice 1\nbob 7 # more\nalicia 9\nbad line\nalice 8\n");
  EXPECT_EQ(allowance_for(with_allowance("", "carol", 3), "carol"), 3u);
}

TEST(DiskRules, OnlyTheUsersOwnImagesCountAsTheirs) {
  EXPECT_EQ(image_path(1001, "demo"), "/var/lib/tnk/disks/1001/demo.ext4");
  EXPECT_TRUE(is_users_image("/var/lib/tnk/disks/1001/demo.ext4\n", 1001));
  EXPECT_TRUE(is_users_image("/var/lib/tnk/disks/1001/demo.ext4 (deleted)\n", 1001));
  EXPECT_FALSE(is_users_image("/var/lib/tnk/disks/1002/demo.ext4", 1001));
  EXPECT_FALSE(is_users_image("/var/lib/tnk/disks/10010/demo.ext4", 1001));
  EXPECT_FALSE(is_users_image("/var/lib/tnk/disks/1001/sub/demo.ext4", 1001));
  EXPECT_FALSE(is_users_image("/home/alice/demo.ext4", 1001));
  EXPECT_FALSE(is_users_image("", 1001));
}

}  // namespace
}  // namespace tnk::disk
