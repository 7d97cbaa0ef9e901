#include "review/host_run.h"

namespace tnk::review {
namespace {

struct Rule {
  const char* pattern;  // a path, "dir/" for everything below dir, or "*name" for any file whose name ends so
  const char* reason;
};

// Keep docs/workspace.md's table in step with this list.
constexpr Rule kRules[] = {
    {".git/hooks/", "git hook"},
    // What makes the host's git enter another repository or read another directory's config (issue
    // 32). `apply` holds what of it would run unless it is named (state/git_guard.h).
    {".git/index", "git index (a gitlink makes git status enter that repository)"},
    {".git/commondir", "git commondir (another directory's config and hooks)"},
    {".git/config.worktree", "git config (worktree)"},
    {".git/modules/", "submodule git dir (its config and hooks)"},
    {".git/worktrees/", "worktree git dir (its commondir)"},
    {".git/objects/info/alternates", "git alternates"},
    {".git/config", "git config (hooks path, filters, aliases)"},
    {".git/info/attributes", "git attributes (filters)"},
    {".gitattributes", "git attributes (filters)"},
    {".gitmodules", "git submodules"},
    {".envrc", "direnv"},
    {"Makefile", "make"},
    {"makefile", "make"},
    {"GNUmakefile", "make"},
    {"*.mk", "make"},
    {"CMakeLists.txt", "cmake"},
    {"*.cmake", "cmake"},
    {"package.json", "npm scripts"},
    {"setup.py", "python build"},
    {"pyproject.toml", "python build"},
    {"build.rs", "cargo build script"},
    {"Cargo.toml", "cargo"},
    {"build.gradle", "gradle"},
    {"build.gradle.kts", "gradle"},
    {"pom.xml", "maven"},
    {".vscode/tasks.json", "editor tasks"},
    {".vscode/settings.json", "editor settings"},
    {".github/workflows/", "CI"},
    {".gitlab-ci.yml", "CI"},
    {".pre-commit-config.yaml", "pre-commit hooks"},
    {".husky/", "git hooks (husky)"},
};

bool matches(std::string_view rel, std::string_view pattern) {
  std::string_view name = rel.substr(rel.rfind('/') + 1);  // npos + 1 == 0: the whole path
  if (pattern.front() == '*') return name.size() > pattern.size() - 1 && name.ends_with(pattern.substr(1));
  if (pattern.back() == '/') return rel.starts_with(pattern);
  // A top-level path, or the same name in any directory for build files (Makefile, package.json, ...)
  if (rel == pattern) return true;
  return pattern.find('/') == std::string_view::npos && pattern.front() != '.' && name == pattern;
}

}  // namespace

std::string host_run_reason(std::string_view rel) {
  // A `.git` below the top: a repository of its own, whose config and hooks the host's git uses once
  // the index links it (or `git add` does).
  if (rel.ends_with("/.git") || rel.find("/.git/") != std::string_view::npos) {
    return "nested git repository (its config and hooks)";
  }
  for (const auto& rule : kRules) {
    if (matches(rel, rule.pattern)) return rule.reason;
  }
  return {};
}

}  // namespace tnk::review
