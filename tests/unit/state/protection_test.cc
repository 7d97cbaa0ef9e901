#include "state/protection.h"

#include <gtest/gtest.h>

#include <fstream>

#include "state/linked_worktree.h"
#include "temp_dir.h"

namespace tnk::state {
namespace {

namespace fs = std::filesystem;
using testing_support::TempDir;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(Protection, ClassifiesWithoutFollowingSymlinks) {
  TempDir dir;
  const fs::path p = dir.path();
  write(p / ".git" / "config", "[core]\n");
  fs::create_directories(p / ".git" / "hooks");
  fs::create_directories(p / "elsewhere" / "hooks");
  fs::create_symlink("elsewhere", p / "linked");
  fs::create_symlink("config", p / ".git" / "config-link");
  auto state = [&](const std::string& rel) { return classify_path(rel, p, rel).state; };
  EXPECT_EQ(state(".git/hooks"), Protection::kProtected);
  EXPECT_EQ(state(".git/config"), Protection::kProtected);
  EXPECT_EQ(state(".envrc"), Protection::kMissing);
  EXPECT_EQ(state(".git/config/x"), Protection::kNotADirectory);
  EXPECT_EQ(state("linked/hooks"), Protection::kSymlink);
  EXPECT_EQ(state(".git/config-link"), Protection::kSymlink);
}

// What appears first is what to watch: a .git file made where there was no repository is reported for
// .git/hooks, not missed because .git/hooks itself can never appear under a file.
TEST(Protection, AMissingPathWatchesItsFirstMissingComponent) {
  TempDir dir;
  ProtectedPath hooks = classify_path(".git/hooks", dir.path(), ".git/hooks");
  EXPECT_EQ(hooks.state, Protection::kMissing);
  EXPECT_EQ(hooks.host_path, dir.path() / ".git");
  std::vector<ProtectedPath> paths{hooks};
  write(dir.path() / ".git", "gitdir: elsewhere\n");
  ASSERT_EQ(mark_appeared(paths).size(), 1U);
  EXPECT_EQ(paths[0].path, ".git/hooks");
}

TEST(Protection, RecordRoundTripsAndMarksWhatAppeared) {
  TempDir dir;
  std::vector<ProtectedPath> paths = {{".git/hooks", dir.path() / "p/.git/hooks", Protection::kProtected},
                                      {".envrc", dir.path() / "p/.envrc", Protection::kMissing}};
  ASSERT_TRUE(write_protection(dir.path(), paths).ok());
  auto read = read_protection(dir.path());
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->size(), 2U);
  EXPECT_EQ((*read)[1].state, Protection::kMissing);
  EXPECT_TRUE(mark_appeared(*read).empty());  // control: nothing appeared yet
  write(dir.path() / "p/.envrc", "export X=1\n");
  auto appeared = mark_appeared(*read);
  ASSERT_EQ(appeared.size(), 1U);
  EXPECT_EQ(appeared[0].path, ".envrc");
  EXPECT_EQ((*read)[1].state, Protection::kAppeared);
  EXPECT_TRUE(mark_appeared(*read).empty());  // said once
  EXPECT_EQ(unprotected_summary(*read), "not protected: .envrc (appeared after start, protected from the next start)");
}

TEST(Protection, NoRecordIsAnEmptyList) {
  TempDir dir;
  auto read = read_protection(dir.path());
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->empty());
  EXPECT_EQ(unprotected_summary(*read), "");
}

// A linked worktree as `git worktree add` makes it.
struct Worktree {
  TempDir dir;
  fs::path main = dir.path() / "main", linked = dir.path() / "linked";
  Worktree() {
    write(main / ".git" / "config", "[core]\n");
    write(main / ".git" / "worktrees" / "linked" / "commondir", "../..\n");
    write(main / ".git" / "worktrees" / "linked" / "gitdir", (linked / ".git").string() + "\n");
    write(linked / ".git", "gitdir: " + (main / ".git" / "worktrees" / "linked").string() + "\n");
  }
};

TEST(LinkedWorktree, FindsTheGitDirAndItsCommonDir) {
  Worktree w;
  std::string why;
  auto found = linked_worktree(w.linked, &why);
  ASSERT_TRUE(found.has_value()) << why;
  EXPECT_EQ(found->git_dir, fs::canonical(w.main / ".git" / "worktrees" / "linked"));
  EXPECT_EQ(found->common_dir, fs::canonical(w.main / ".git"));
  EXPECT_FALSE(linked_worktree(w.main, &why).has_value());  // .git is a directory: not a worktree
  EXPECT_EQ(why, "");
}

TEST(LinkedWorktree, AGitFileCannotShareAnyOtherDirectory) {
  Worktree w;
  write(w.dir.path() / "secrets" / "commondir", "..\n");
  write(w.linked / ".git", "gitdir: " + (w.dir.path() / "secrets").string() + "\n");
  std::string why;
  EXPECT_FALSE(linked_worktree(w.linked, &why).has_value());
  EXPECT_NE(why.find("is not a worktree of this project"), std::string::npos) << why;
  // A worktree dir that names this project but lies outside a common dir's worktrees/ is refused too.
  write(w.dir.path() / "fake" / "gitdir", (w.linked / ".git").string() + "\n");
  write(w.dir.path() / "fake" / "commondir", "..\n");
  write(w.linked / ".git", "gitdir: " + (w.dir.path() / "fake").string() + "\n");
  EXPECT_FALSE(linked_worktree(w.linked, &why).has_value());
  EXPECT_NE(why.find("worktrees/"), std::string::npos) << why;
}

}  // namespace
}  // namespace tnk::state
