#include "supervisor/protection.h"

#include <sys/stat.h>

#include <algorithm>

#include "core/host_git.h"
#include "state/git_guard.h"
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

// `rel` when it exists as a file or directory, quietly otherwise: the git dirs below are found, not
// listed by the user, so what they lack is not worth a note (the git guard sees it appear).
void add_present(ProtectionPlan& plan, const fs::path& base, const std::string& rel, std::vector<std::string>& binds,
                 const std::string& shown_prefix) {
  if (state::classify_path(rel, base, rel).state != state::Protection::kProtected) return;
  add(plan, shown_prefix + rel, base, rel, binds);
}

std::vector<std::string> subdirs(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->symlink_status(ec).type() == fs::file_type::directory) names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Every submodule git dir below `rel` (modules/a, modules/a/modules/b, modules/x/y for a submodule
// named x/y), up to four levels: what `git submodule update` and the top's `git status` read.
void add_modules(ProtectionPlan& plan, const fs::path& base, const std::string& rel, std::vector<std::string>& binds,
                 const std::string& shown_prefix, int depth) {
  if (depth > 4) return;
  for (const auto& name : subdirs(base / rel)) {
    const std::string dir = rel + "/" + name;
    std::error_code ec;
    if (fs::exists(base / dir / "HEAD", ec)) {
      for (const char* entry : {"config", "hooks", "commondir", "config.worktree"}) {
        add_present(plan, base, dir + "/" + entry, binds, shown_prefix);
      }
      add_modules(plan, base, dir + "/modules", binds, shown_prefix, depth + 1);
    } else {
      add_modules(plan, base, dir, binds, shown_prefix, depth + 1);
    }
  }
}

// What the host's git reads from a git dir besides the manifest's paths (issue 32): its
// config.worktree, each worktree's commondir and config.worktree (rewritten, a commondir sends that
// worktree's git to a config the sandbox wrote), and every submodule's config, hooks, commondir and
// config.worktree. `rel` is the git dir relative to `base` ("" for a shared common dir).
void add_git_dir(ProtectionPlan& plan, const fs::path& base, const std::string& rel, std::vector<std::string>& binds,
                 const std::string& shown_prefix) {
  const std::string at = rel.empty() ? "" : rel + "/";
  add_present(plan, base, at + "config.worktree", binds, shown_prefix);
  for (const auto& name : subdirs(base / (at + "worktrees"))) {
    add_present(plan, base, at + "worktrees/" + name + "/commondir", binds, shown_prefix);
    add_present(plan, base, at + "worktrees/" + name + "/config.worktree", binds, shown_prefix);
  }
  add_modules(plan, base, at + "modules", binds, shown_prefix, 0);
}

// core.hooksPath of the top config (the user's, read-only inside) when it names a directory inside
// the project, as husky's `.husky/_` does: there the hooks are project files the sandbox could write.
void add_hooks_path(ProtectionPlan& plan, const SupervisorConfig& config, const fs::path& top_config) {
  auto got =
      run_host_git("/", {"config", "--file", top_config.string(), "--get", "core.hooksPath"}, std::chrono::seconds(30));
  if (!got || got->exit_code != 0) return;
  const std::string value = got->out.substr(0, got->out.find('\n'));
  if (value.empty()) return;
  const fs::path hooks =
      (fs::path(value).is_absolute() ? fs::path(value) : config.project_dir / value).lexically_normal();
  const fs::path rel = hooks.lexically_relative(config.project_dir);
  if (rel.empty() || *rel.begin() == ".." || rel == ".") return;
  add(plan, rel.generic_string(), config.project_dir, rel.generic_string(), plan.project_binds);
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
  add_git_dir(plan, worktree->common_dir, "", plan.git_dir_binds, worktree->common_dir.string() + "/");
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
  if (worktree) {
    plan_worktree(plan, config, &*worktree);
    add_hooks_path(plan, config, worktree->common_dir / "config");
  } else if (fs::is_directory(config.project_dir / ".git")) {
    add_git_dir(plan, config.project_dir, ".git", plan.project_binds, "");
    add_hooks_path(plan, config, config.project_dir / ".git" / "config");
  }
  return plan;
}

Result<std::vector<std::string>> record_protection(const SupervisorConfig& config, const ProtectionPlan& plan) {
  TNK_RETURN_IF_ERROR(state::write_protection(config.state_dir, plan.paths));
  // What the host's git would run, as it is before the sandbox's first session (state/git_guard.h).
  TNK_RETURN_IF_ERROR(state::write_git_record(config.state_dir, state::git_snapshot(config.project_dir), {},
                                              state::git_stamp(config.project_dir)));
  std::vector<std::string> notes = plan.notes;
  std::string summary = state::unprotected_summary(plan.paths);
  if (!summary.empty()) notes.push_back(summary + "; tnk reports any that appears (docs/workspace.md)");
  return notes;
}

}  // namespace tnk::supervisor
