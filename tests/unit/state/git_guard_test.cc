#include "state/git_guard.h"

#include <gtest/gtest.h>

#include <fstream>

#include "state/git_config_scan.h"
#include "temp_dir.h"

namespace tnk::state {
namespace {

namespace fs = std::filesystem;
using testing_support::TempDir;

// `git config --list -z` records: key\nvalue\0.
std::string listed(std::initializer_list<std::string> records) {
  std::string out;
  for (const auto& r : records) out += r + '\0';
  return out;
}

bool never_inside(const std::string&) { return false; }

TEST(GitConfigScan, DataKeysRunNothing) {
  // What `git init`, `git clone` and `git submodule add` write.
  auto entries =
      runnable_entries(listed({"core.repositoryformatversion\n0", "core.filemode\ntrue", "core.bare\nfalse",
                               "core.logallrefupdates\ntrue", "remote.origin.url\nhttps://example.com/x.git",
                               "remote.origin.fetch\n+refs/heads/*:refs/remotes/origin/*", "branch.main.remote\norigin",
                               "branch.main.merge\nrefs/heads/main", "remote.my.dotted.name.url\n/x"}),
                       never_inside);
  EXPECT_TRUE(entries.empty());
}

TEST(GitConfigScan, EverythingElseIsRunnableFailingClosed) {
  auto entries = runnable_entries(
      listed({"core.fsmonitor\ntouch /tmp/x; false", "alias.st\n!sh -c id", "remote.origin.uploadpack\nsh -c id",
              "include.path\n../evil", "some.future.key\nvalue", "submodule.x.update\n!id", "core.bare\nfalse"}),
      never_inside);
  EXPECT_EQ(entries, (std::vector<std::string>{"alias.st=!sh -c id", "core.fsmonitor=touch /tmp/x; false",
                                               "include.path=../evil", "remote.origin.uploadpack=sh -c id",
                                               "some.future.key=value", "submodule.x.update=!id"}));
}

TEST(GitConfigScan, CoreWorktreeOnlyInsideTheProject) {
  auto inside = [](const std::string& value) { return value == "../../../lib"; };
  EXPECT_TRUE(runnable_entries(listed({"core.worktree\n../../../lib"}), inside).empty());
  EXPECT_EQ(runnable_entries(listed({"core.worktree\n/home/u"}), inside),
            std::vector<std::string>{"core.worktree=/home/u"});
}

TEST(GitConfigScan, AKeyWithoutAValueAndSectionCase) {
  EXPECT_EQ(runnable_entries(listed({"alias.x"}), never_inside), std::vector<std::string>{"alias.x"});
  EXPECT_TRUE(runnable_entries(listed({"Core.Bare\nfalse"}), never_inside).empty());
}

TEST(GitGuard, HoldsWhatIsNewOrChangedAndRuns) {
  GitSnapshot start = {{"/p/.git/config", {"core.fsmonitor=the user's", "x"}},
                       {"/p/.git/hooks/pre-commit", {"1:2", "h"}}};
  EXPECT_FALSE(must_hold(start, "/p/.git/config", {"core.fsmonitor=the user's", "x"}));
  EXPECT_TRUE(must_hold(start, "/p/.git/config", {"core.fsmonitor=other", "x"}));
  EXPECT_FALSE(must_hold(start, "/p/sub/.git/config", {"", ""}));  // a new config of data only
  EXPECT_TRUE(must_hold(start, "/p/sub/.git/config", {"alias.x=y", ""}));
  EXPECT_TRUE(must_hold(start, "/p/.git/hooks/pre-commit", {"1:3", "h"}));
  EXPECT_TRUE(must_hold(start, "/p/.git/commondir", {"5:6", "c"}));
}

TEST(GitGuard, HoldRenamesInsideTheRootsOnlyAndNeverReplaces) {
  TempDir dir;
  const fs::path p = dir.path();
  fs::create_directories(p / "sub" / ".git");
  std::ofstream(p / "sub" / ".git" / "config") << "[alias]\n";
  std::ofstream(p / "sub" / ".git" / "config.tnk-held") << "earlier\n";
  HeldEntry held = hold_git_entry(p / "sub" / ".git" / "config", {"alias.x", "w"}, {p});
  EXPECT_EQ(held.held_as, (p / "sub" / ".git" / "config.tnk-held-2").string()) << held.error;
  EXPECT_FALSE(fs::exists(p / "sub" / ".git" / "config"));
  // A symbolic link on the way is not followed.
  fs::create_directories(p / "real" / ".git");
  std::ofstream(p / "real" / ".git" / "config") << "[alias]\n";
  fs::create_directory_symlink("real", p / "link");
  EXPECT_TRUE(hold_git_entry(p / "link" / ".git" / "config", {"alias.x", "w"}, {p}).held_as.empty());
  EXPECT_TRUE(fs::exists(p / "real" / ".git" / "config"));
  EXPECT_FALSE(hold_git_entry("/etc/passwd", {"x", "w"}, {p}).error.empty());
}

TEST(GitGuard, RecordRoundTrips) {
  TempDir dir;
  GitSnapshot start = {{"/p/.git/config", {"", ""}}};
  ASSERT_TRUE(write_git_record(dir.path(), start, {{"/p/a", "/p/a.tnk-held", "w", ""}}, "1:2:3.4;").ok());
  auto record = read_git_record(dir.path());
  ASSERT_TRUE(record.ok());
  EXPECT_TRUE(record->present);
  EXPECT_EQ(record->start.size(), 1u);
  ASSERT_EQ(record->held.size(), 1u);
  EXPECT_EQ(record->held[0].held_as, "/p/a.tnk-held");
  EXPECT_EQ(record->stamp, "1:2:3.4;");
  EXPECT_FALSE(read_git_record(dir.path() / "none")->present);
}

// The stamp that decides whether a session's end walks the git dirs again: a new index, a submodule's git
// dir or a worktree changes it; a file of the worktree does not.
TEST(GitGuard, TheStampChangesWithTheIndexModulesAndWorktreesOnly) {
  TempDir dir;
  const fs::path p = dir.path();
  fs::create_directories(p / ".git");
  const std::string empty = git_stamp(p);
  std::ofstream(p / "README") << "text\n";
  EXPECT_EQ(git_stamp(p), empty);
  std::ofstream(p / ".git" / "index") << "DIRC";
  const std::string indexed = git_stamp(p);
  EXPECT_NE(indexed, empty);
  fs::create_directories(p / ".git" / "modules" / "sub");
  EXPECT_NE(git_stamp(p), indexed);
  const std::string with_module = git_stamp(p);
  fs::create_directories(p / ".git" / "worktrees" / "w");
  EXPECT_NE(git_stamp(p), with_module);
}

}  // namespace
}  // namespace tnk::state
