#include "review/diff.h"

#include <gtest/gtest.h>

#include <set>

#include "review/host_run.h"
#include "review_test_util.h"

namespace tnk::review {
namespace {

using namespace fixture;

TEST(ReviewDiff, ReportsAddedModifiedDeletedAndModeChanges) {
  LayerFixture f;
  put(f.project / "same.txt", "same");
  put(f.project / "edited.txt", "before");
  put(f.project / "gone.txt", "bye");
  put(f.project / "run.sh", "echo");
  put(f.project / "src/a.c", "int a;");
  // The layer: a copy-up that changed nothing, an edit, a deletion, a chmod, a new file in a new dir.
  put(f.upper / "same.txt", "same");
  put(f.upper / "edited.txt", "after!");
  ASSERT_TRUE(whiteout(f.upper / "gone.txt"));
  put(f.upper / "run.sh", "echo", fs::perms(0755));
  put(f.upper / "new/b.c", "int b;");
  auto changes = layer_changes(f);
  EXPECT_EQ(summary(changes), "modified edited.txt;deleted gone.txt;added new;added new/b.c;mode run.sh;");
  EXPECT_EQ(changes[4].old_mode, 0644u);
  EXPECT_EQ(changes[4].new_mode, 0755u);
  EXPECT_EQ(changes[1].old_type, EntryType::kFile);
  EXPECT_EQ(changes[1].type, EntryType::kNone);
}

TEST(ReviewDiff, SameSizeDifferentBytesIsAModification) {
  LayerFixture f;
  put(f.project / "x", "aaaa");
  put(f.upper / "x", "aaab");
  EXPECT_EQ(summary(layer_changes(f)), "modified x;");
}

TEST(ReviewDiff, ARenameIsADeletionAndAnAddition) {
  LayerFixture f;
  put(f.project / "old.txt", "text");
  ASSERT_TRUE(whiteout(f.upper / "old.txt"));
  put(f.upper / "new.txt", "text");
  EXPECT_EQ(summary(layer_changes(f)), "added new.txt;deleted old.txt;");
}

TEST(ReviewDiff, AnOpaqueDirectoryHidesWhatTheProjectHadThere) {
  LayerFixture f;
  put(f.project / "lib/keep.c", "k");
  put(f.project / "lib/old.c", "o");
  if (!make_opaque(f.upper / "lib")) GTEST_SKIP() << "no user xattrs on " << f.upper;
  put(f.upper / "lib/keep.c", "k");
  put(f.upper / "lib/fresh.c", "f");
  EXPECT_EQ(summary(layer_changes(f)), "added lib/fresh.c;deleted lib/old.c;");
}

TEST(ReviewDiff, SymlinksAreComparedByTargetNeverFollowed) {
  LayerFixture f;
  fs::create_symlink("a", f.project / "same");
  fs::create_symlink("a", f.upper / "same");
  fs::create_symlink("/etc", f.upper / "out");
  EXPECT_EQ(summary(layer_changes(f)), "added out;");
}

TEST(ReviewDiff, FlagsPathsTheHostRuns) {
  LayerFixture f;
  put(f.upper / ".git/hooks/pre-commit", "#!/bin/sh");
  put(f.upper / "Makefile", "all:");
  put(f.upper / "sub/package.json", "{}");
  put(f.upper / "notes.txt", "n");
  std::set<std::string> flagged;
  for (const auto& c : layer_changes(f)) {
    if (!c.host_run.empty()) flagged.insert(c.path);
  }
  EXPECT_EQ(flagged, (std::set<std::string>{".git/hooks/pre-commit", "Makefile", "sub/package.json"}));
}

TEST(ReviewHostRun, TheListMatchesByPathNameAndSuffix) {
  EXPECT_EQ(host_run_reason(".git/hooks/post-checkout"), "git hook");
  EXPECT_EQ(host_run_reason(".git/config"), "git config (hooks path, filters, aliases)");
  EXPECT_EQ(host_run_reason(".envrc"), "direnv");
  // Issue 32: what makes the host's git enter another repository or read another config.
  EXPECT_EQ(host_run_reason("sub/.git/config"), "nested git repository (its config and hooks)");
  EXPECT_EQ(host_run_reason("a/b/.git"), "nested git repository (its config and hooks)");
  EXPECT_EQ(host_run_reason(".git/modules/lib/hooks/post-checkout"), "submodule git dir (its config and hooks)");
  EXPECT_EQ(host_run_reason(".git/worktrees/f/commondir"), "worktree git dir (its commondir)");
  EXPECT_EQ(host_run_reason(".git/index"), "git index (a gitlink makes git status enter that repository)");
  EXPECT_EQ(host_run_reason(".git/objects/ab/cdef"), "");
  EXPECT_EQ(host_run_reason("my.git/config"), "");
  EXPECT_EQ(host_run_reason("sub/.envrc"), "");  // direnv runs the one where you cd: only the project's is listed
  EXPECT_EQ(host_run_reason("tools/rules.mk"), "make");
  EXPECT_EQ(host_run_reason("web/package.json"), "npm scripts");
  EXPECT_EQ(host_run_reason(".vscode/tasks.json"), "editor tasks");
  EXPECT_EQ(host_run_reason("src/main.c"), "");
  EXPECT_EQ(host_run_reason(".mk"), "");
}

TEST(ReviewDiff, SelectorsTakeAPathAndEverythingBelowIt) {
  EXPECT_TRUE(selects("", "a/b"));
  EXPECT_TRUE(selects("a", "a/b"));
  EXPECT_TRUE(selects("a/b", "a/b"));
  EXPECT_FALSE(selects("a", "ab"));
  EXPECT_FALSE(selects("a/b", "a"));
}

}  // namespace
}  // namespace tnk::review
