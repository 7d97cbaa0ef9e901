#include "state/git_guard.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/host_git.h"
#include "core/nofollow_dir.h"
#include "core/strings.h"
#include "core/subprocess.h"
#include "core/unique_fd.h"
#include "state/git_config_scan.h"
#include "state/layout.h"
#include "state/linked_worktree.h"

namespace tnk::state {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxGitDirs = 200;
constexpr int kMaxDepth = 4;
constexpr std::string_view kHeldSuffix = ".tnk-held";

// The names in `dir`, which is not followed when it is a symbolic link; empty when it cannot be read.
std::vector<std::string> git_guard_names(const fs::path& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return {};
  auto names = dir_names(fd.get(), dir.string());
  return names ? *names : std::vector<std::string>{};
}

bool guard_inside(const fs::path& path, const fs::path& root) {
  const fs::path rel = path.lexically_normal().lexically_relative(root);
  return !rel.empty() && *rel.begin() != "..";
}

bool guard_inside_any(const fs::path& path, const std::vector<fs::path>& roots) {
  for (const auto& root : roots) {
    if (path == root || guard_inside(path, root)) return true;
  }
  return false;
}

// git with nothing of the repository's config able to run (core/host_git.h).
Result<ProcessResult> git_in(const fs::path& dir, std::vector<std::string> args) {
  return run_host_git(dir, args, std::chrono::seconds(30));
}

std::string guard_stamp(const struct stat& st) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%llu:%lld:%lld.%09ld:%lld.%09ld:%o", static_cast<unsigned long long>(st.st_ino),
                static_cast<long long>(st.st_size), static_cast<long long>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec,
                static_cast<long long>(st.st_ctim.tv_sec), st.st_ctim.tv_nsec, static_cast<unsigned>(st.st_mode));
  return buf;
}

struct Walk {
  std::vector<fs::path> roots;
  const GitVisit& visit;
  std::set<fs::path> seen;
  int budget = kMaxGitDirs;
};

// A config file's runnable entries (git_config_scan.h). Not a regular file (a FIFO would hang git, a
// link could name any file): its stamp, which is then held like any new one.
GitEntry config_entry(const fs::path& file, const struct stat& st, const Walk& walk) {
  if (!S_ISREG(st.st_mode)) return {"not a regular file " + guard_stamp(st), "a config that is not a regular file"};
  auto listed = git_in("/", {"config", "--file", file.string(), "--list", "-z"});
  if (!listed || listed->exit_code != 0) return {"unreadable " + guard_stamp(st), "a config git cannot read"};
  const fs::path git_dir = file.parent_path();
  auto worktree_inside = [&](const std::string& value) {
    fs::path where = fs::path(value).is_absolute() ? fs::path(value) : git_dir / value;
    return guard_inside_any(where.lexically_normal(), walk.roots);
  };
  std::vector<std::string> runnable = runnable_entries(listed->out, worktree_inside);
  if (runnable.empty()) return {"", ""};
  return {join(runnable, "\n"), "config entries git may run or follow: " + join(runnable, "; ")};
}

void visit_file(Walk& walk, const fs::path& path, bool config, const std::string& what) {
  struct stat st {};
  if (!guard_inside_any(path, walk.roots) || ::lstat(path.c_str(), &st) != 0) return;
  walk.visit(path, config ? config_entry(path, st, walk) : GitEntry{guard_stamp(st), what});
}

void visit_hooks(Walk& walk, const fs::path& dir) {
  struct stat st {};
  if (!guard_inside_any(dir, walk.roots) || ::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
  for (const auto& name : git_guard_names(dir)) {
    // git runs hooks by their names only: the samples and what tnk held are never run.
    if (name.ends_with(".sample") || name.find(kHeldSuffix) != std::string::npos) continue;
    visit_file(walk, dir / name, false, "a hook git runs");
  }
}

// The value of `key` in a config file tnk trusts (the protected top config), or "".
std::string config_value(const fs::path& file, const std::string& key) {
  auto got = git_in("/", {"config", "--file", file.string(), "--get", key});
  if (!got || got->exit_code != 0) return "";
  return got->out.substr(0, got->out.find('\n'));
}

void walk_repository(Walk& walk, const fs::path& worktree, int depth);

// One git dir: what git reads from it, in the order that keeps git from reading a changed file before
// the visitor saw it (commondir redirects the rest); then the work tree's gitlinks.
void walk_git_dir(Walk& walk, const fs::path& git_dir, const fs::path& common_dir, const fs::path& worktree,
                  int depth) {
  std::error_code ec;
  fs::path canonical = fs::canonical(git_dir, ec);
  if (ec || !guard_inside_any(canonical, walk.roots) || !walk.seen.insert(canonical).second || walk.budget-- <= 0)
    return;
  visit_file(walk, git_dir / "commondir", false, "commondir: sends git to another directory's config and hooks");
  visit_file(walk, git_dir / "config.worktree", true, "");
  visit_file(walk, common_dir / "config", true, "");
  std::string hooks_path = config_value(common_dir / "config", "core.hooksPath");
  if (!hooks_path.empty() && !worktree.empty()) {
    fs::path hooks = fs::path(hooks_path).is_absolute() ? fs::path(hooks_path) : worktree / hooks_path;
    visit_hooks(walk, hooks.lexically_normal());
  } else {
    visit_hooks(walk, common_dir / "hooks");
  }
  if (!worktree.empty() && depth < kMaxDepth) walk_repository(walk, worktree, depth + 1);
}

// A directory holding `.git` (a git dir, or a file naming one): walked as a repository.
void walk_nested(Walk& walk, const fs::path& dir, int depth) {
  const fs::path dot_git = dir / ".git";
  struct stat st {};
  if (::lstat(dot_git.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    walk_git_dir(walk, dot_git, dot_git, dir, depth);
  } else if (S_ISREG(st.st_mode)) {
    auto text = read_file(dot_git);
    if (!text || !text->starts_with("gitdir: ")) return;
    fs::path named = text->substr(8, text->find('\n') - 8);
    fs::path git_dir = named.is_absolute() ? named : dir / named;
    walk_git_dir(walk, git_dir, git_dir, dir, depth);
  }
}

// The repositories git enters from `worktree`: its gitlinks, and what `git add` would make gitlinks
// (untracked directories holding a repository, which ls-files lists as "dir/").
void walk_repository(Walk& walk, const fs::path& worktree, int depth) {
  auto staged = git_in(worktree, {"ls-files", "--stage", "-z"});
  if (staged && staged->exit_code == 0) {
    for (const auto& record : split_z(staged->out)) {
      const size_t tab = record.find('\t');
      if (record.starts_with("160000 ") && tab != std::string::npos)
        walk_nested(walk, worktree / record.substr(tab + 1), depth);
    }
  }
  auto untracked = git_in(worktree, {"ls-files", "--others", "--exclude-standard", "-z"});
  if (untracked && untracked->exit_code == 0) {
    for (const auto& path : split_z(untracked->out)) {
      if (path.ends_with('/')) walk_nested(walk, worktree / path.substr(0, path.size() - 1), depth);
    }
  }
}

// Every git dir below `dir` (modules/a, modules/a/modules/b): those `git submodule update` uses.
void walk_modules(Walk& walk, const fs::path& dir, int depth) {
  if (depth > kMaxDepth) return;
  for (const auto& name : git_guard_names(dir)) {
    const fs::path sub = dir / name;
    struct stat st {};
    if (::lstat(sub.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (::lstat((sub / "HEAD").c_str(), &st) == 0) {
      walk_git_dir(walk, sub, sub, {}, kMaxDepth);
      walk_modules(walk, sub / "modules", depth + 1);
    } else {
      walk_modules(walk, sub, depth + 1);  // a submodule named a/b
    }
  }
}

}  // namespace

std::vector<fs::path> git_roots(const fs::path& project) {
  std::vector<fs::path> roots = {project};
  std::string why;
  if (auto worktree = linked_worktree(project, &why)) roots.push_back(worktree->common_dir);
  return roots;
}

void walk_git(const fs::path& project, const GitVisit& visit) {
  Walk walk{git_roots(project), visit, {}, kMaxGitDirs};
  std::string why;
  fs::path common = project / ".git";
  if (auto worktree = linked_worktree(project, &why)) {
    common = worktree->common_dir;
    walk_git_dir(walk, worktree->git_dir, common, project, 0);
  } else {
    walk_nested(walk, project, 0);
  }
  // The other worktrees of the repository: their commondir and config.worktree.
  {
    for (const auto& name : git_guard_names(common / "worktrees")) {
      if (walk.seen.count(common / "worktrees" / name) != 0) continue;  // this worktree's: visited above
      visit_file(walk, common / "worktrees" / name / "commondir", false,
                 "commondir: sends git to another directory's config and hooks");
      visit_file(walk, common / "worktrees" / name / "config.worktree", true, "");
    }
  }
  walk_modules(walk, common / "modules", 0);
}

GitSnapshot git_snapshot(const fs::path& project) {
  GitSnapshot snapshot;
  walk_git(project, [&](const fs::path& entry, const GitEntry& now) { snapshot[entry.string()] = now; });
  return snapshot;
}

bool must_hold(const GitSnapshot& start, const std::string& path, const GitEntry& now) {
  auto was = start.find(path);
  if (was != start.end() && was->second.fingerprint == now.fingerprint) return false;
  return !now.fingerprint.empty();  // a config whose entries are all data runs nothing
}

HeldEntry hold_git_entry(const fs::path& entry, const GitEntry& now, const std::vector<fs::path>& roots) {
  HeldEntry held{entry.string(), "", now.what, ""};
  fs::path root;
  for (const auto& r : roots) {
    if (guard_inside(entry, r)) root = r;
  }
  if (root.empty()) {
    held.error = "not inside the project";
    return held;
  }
  UniqueFd dir(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  const fs::path rel = entry.lexically_normal().lexically_relative(root);
  for (auto it = rel.begin(); dir.valid() && std::next(it) != rel.end(); ++it) {
    dir.reset(::openat(dir.get(), it->c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  }
  if (!dir.valid()) {
    held.error = std::string("opening its directory: ") + std::strerror(errno);
    return held;
  }
  const std::string name = entry.filename().string();
  for (int n = 1; n <= 9; ++n) {
    std::string target = name + std::string(kHeldSuffix) + (n == 1 ? "" : "-" + std::to_string(n));
    if (::renameat2(dir.get(), name.c_str(), dir.get(), target.c_str(), RENAME_NOREPLACE) == 0) {
      held.held_as = (entry.parent_path() / target).string();
      return held;
    }
    if (errno != EEXIST) break;
  }
  held.error = std::string("renaming it: ") + std::strerror(errno);
  return held;
}

std::string git_stamp(const fs::path& project) {
  std::string stamp;
  auto add = [&stamp](const fs::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      stamp += "-;";
      return;
    }
    stamp += std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) +
             "." + std::to_string(st.st_mtim.tv_nsec) + ";";
  };
  fs::path git_dir = project / ".git";
  add(git_dir);
  struct stat st {};
  if (::lstat(git_dir.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {  // a linked worktree: its own git dir
    auto text = read_file(git_dir);
    if (text && text->starts_with("gitdir: ")) {
      fs::path named = text->substr(8, text->find('\n') - 8);
      git_dir = named.is_absolute() ? named : project / named;
      add(git_dir);
    }
  }
  for (const char* name : {"index", "modules", "worktrees"}) add(git_dir / name);
  return stamp;
}

Status write_git_record(const fs::path& sandbox_dir, const GitSnapshot& start, const std::vector<HeldEntry>& held,
                        const std::string& stamp) {
  nlohmann::json entries = nlohmann::json::object();
  for (const auto& [path, entry] : start) entries[path] = {{"fingerprint", entry.fingerprint}, {"what", entry.what}};
  nlohmann::json list = nlohmann::json::array();
  for (const auto& h : held) {
    list.push_back({{"path", h.path}, {"held_as", h.held_as}, {"what", h.what}, {"error", h.error}});
  }
  nlohmann::json doc = {{"start", entries}, {"held", list}, {"stamp", stamp}};
  return write_file_atomic(sandbox_dir / kGitGuardFile, doc.dump() + "\n", 0600);
}

Result<GitRecord> read_git_record(const fs::path& sandbox_dir) {
  const fs::path file = sandbox_dir / kGitGuardFile;
  GitRecord record;
  std::error_code ec;
  if (!fs::exists(file, ec)) return record;
  TNK_ASSIGN_OR_RETURN(std::string text, read_file(file));
  try {
    auto doc = nlohmann::json::parse(text);
    for (const auto& [path, entry] : doc.at("start").items()) {
      record.start[path] = {entry.at("fingerprint").get<std::string>(), entry.at("what").get<std::string>()};
    }
    for (const auto& h : doc.at("held")) {
      record.held.push_back({h.at("path").get<std::string>(), h.at("held_as").get<std::string>(),
                             h.at("what").get<std::string>(), h.at("error").get<std::string>()});
    }
    record.stamp = doc.value("stamp", std::string());
  } catch (const nlohmann::json::exception& e) {
    return failed("reading " + file.string() + ": " + e.what(), "stop and start the sandbox to write it again");
  }
  record.present = true;
  return record;
}

}  // namespace tnk::state
