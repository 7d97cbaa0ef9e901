// What a supervisor protects at start, planned from a project's files (supervisor/protection.h).
#include "supervisor/protection.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "temp_dir.h"

namespace tnk::supervisor {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

SupervisorConfig config_for(const fs::path& project) {
  SupervisorConfig c;
  c.project_dir = project;
  c.mount_point = "/workspace";
  c.readonly_paths = {".git/hooks", ".git/config", ".envrc"};
  return c;
}

TEST(ProtectionPlan, BindsWhatExistsAndNotesTheRest) {
  testing_support::TempDir dir;
  const fs::path p = dir.path() / "demo";
  fs::create_directories(p / ".git" / "hooks");
  write(p / ".git" / "config", "[core]\n");
  ProtectionPlan plan = plan_protection(config_for(p));
  EXPECT_EQ(plan.project_binds, (std::vector<std::string>{".git/hooks", ".git/config"}));
  ASSERT_EQ(plan.paths.size(), 3U);
  EXPECT_EQ(plan.paths[2].state, state::Protection::kMissing);
  EXPECT_TRUE(plan.git_common_dir.empty());
  EXPECT_TRUE(plan.notes.empty());
  // A second name for a protected file is said at start.
  ASSERT_EQ(::link((p / ".git" / "config").c_str(), (p / "config-copy").c_str()), 0);
  plan = plan_protection(config_for(p));
  ASSERT_EQ(plan.notes.size(), 1U);
  EXPECT_EQ(plan.notes[0],
            ".git/config has 1 other hard link(s), which are not protected: find them with `find "
            "-samefile`");
}

TEST(ProtectionPlan, ALinkedWorktreeProtectsItsGitFileAndTheMainRepositorysPaths) {
  testing_support::TempDir dir;
  const fs::path main = dir.path() / "main", linked = dir.path() / "linked";
  fs::create_directories(main / ".git" / "hooks");
  write(main / ".git" / "config", "[core]\n");
  write(main / ".git" / "worktrees" / "linked" / "commondir", "../..\n");
  write(main / ".git" / "worktrees" / "linked" / "gitdir", (linked / ".git").string() + "\n");
  write(linked / ".git", "gitdir: " + (main / ".git" / "worktrees" / "linked").string() + "\n");
  ProtectionPlan plan = plan_protection(config_for(linked));
  const fs::path common = fs::canonical(main / ".git");
  EXPECT_EQ(plan.git_common_dir, common);
  EXPECT_EQ(plan.project_binds, (std::vector<std::string>{".git"}));  // .envrc is missing
  // Issue 32: the worktree's own commondir too (rewritten, it sends the host's git to another config).
  EXPECT_EQ(plan.git_dir_binds, (std::vector<std::string>{"hooks", "config", "worktrees/linked/commondir"}));
  std::vector<std::string> shown;
  for (const auto& path : plan.paths) shown.push_back(path.path);
  EXPECT_EQ(shown,
            (std::vector<std::string>{".envrc", ".git", (common / "hooks").string(), (common / "config").string(),
                                      (common / "worktrees" / "linked" / "commondir").string()}));
}

}  // namespace
}  // namespace tnk::supervisor
