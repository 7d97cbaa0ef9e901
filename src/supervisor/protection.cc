#include "supervisor/protection.h"

#include <sys/stat.h>

#include "state/linked_worktree.h"

namespace tnk::supervisor {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kGitPrefix = ".git/";

// Why a git dir cannot be shared at its own path: under the kernel's file systems or the project's
// mount inside, or a path that the vm's boot line and virtiofsd's options cannot carry. "" when it can.
std::string git_dir_conflict(const fs::path& dir, const std::string& mount_point) {
  const std::string d = dir.string();
  for (std::string reserved : {"/proc", "/dev", "/sys", mount_point.c_str()}) {
    if (d == reserved || d.rfind(reserved + "/", 0) == 0) return "it would be under " + reserved + " inside";
  }
  for (char ch : d) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= ' ' || c == ',' || c == 0x7f) return "its path holds a space, comma or control character";
  }
  return "";
}

void add(ProtectionPlan& plan, std::string shown, const fs::path& base, const std::string& rel,
         std::vector<std::string>& binds) {
  state::ProtectedPath now = state::classify_path(std::move(shown), base, rel);
  if (now.state == state::Protection::kProtected) binds.push_back(rel);
  // Another name of the same file, made before, is an ordinary file the sandbox can write.
  struct stat st {};
  if (now.state == state::Protection::kProtected && ::lstat(now.host_path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      st.st_nlink > 1) {
    plan.notes.push_back(now.path + " has " + std::to_string(st.st_nlink - 1) +
                         " other hard link(s), which are not protected: find them with `find -samefile`");
  }
  plan.paths.push_back(std::move(now));
}

// A linked worktree's `.git/...` paths are its common dir's (the project has only the .git file).
void plan_worktree(ProtectionPlan& plan, const SupervisorConfig& config, const state::LinkedWorktree* worktree) {
  // The .git file names the git dir: rewritten, it would send the host's git to hooks of the sandbox's.
  add(plan, ".git", config.project_dir, ".git", plan.project_binds);
  if (auto conflict = git_dir_conflict(worktree->common_dir, config.mount_point); !conflict.empty()) {
    plan.notes.push_back("the linked worktree's git dir " + worktree->common_dir.string() +
                         " is not shared: " + conflict);
    return;
  }
  plan.git_common_dir = worktree->common_dir;
  for (const auto& rel : config.readonly_paths) {
    if (rel.rfind(kGitPrefix, 0) != 0) continue;
    const std::string inside = rel.substr(kGitPrefix.size());
    add(plan, (worktree->common_dir / inside).string(), worktree->common_dir, inside, plan.git_dir_binds);
  }
}

}  // namespace

ProtectionPlan plan_protection(const SupervisorConfig& config) {
  ProtectionPlan plan;
  std::string why;
  auto worktree = state::linked_worktree(config.project_dir, &why);
  if (!why.empty()) plan.notes.push_back(why);
  for (const auto& rel : config.readonly_paths) {
    if (worktree && rel.rfind(kGitPrefix, 0) == 0) continue;
    add(plan, rel, config.project_dir, rel, plan.project_binds);
  }
  if (worktree) plan_worktree(plan, config, &*worktree);
  return plan;
}

Result<std::vector<std::string>> record_protection(const SupervisorConfig& config, const ProtectionPlan& plan) {
  TNK_RETURN_IF_ERROR(state::write_protection(config.state_dir, plan.paths));
  std::vector<std::string> notes = plan.notes;
  std::string summary = state::unprotected_summary(plan.paths);
  if (!summary.empty()) notes.push_back(summary + "; tnk reports any that appears (docs/workspace.md)");
  return notes;
}

}  // namespace tnk::supervisor
