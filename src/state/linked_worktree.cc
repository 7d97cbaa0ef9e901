#include "state/linked_worktree.h"

#include <sys/stat.h>

#include "core/files.h"

namespace tnk::state {

namespace fs = std::filesystem;

namespace {

// The first line of `file` without its newline; nullopt when it is not a regular file (never a FIFO
// that would hang the start) or cannot be read.
std::optional<std::string> first_line(const fs::path& file) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  auto text = read_file(file);
  if (!text) return std::nullopt;
  return text->substr(0, text->find('\n'));
}

std::optional<fs::path> canonical_dir(const fs::path& path) {
  std::error_code ec;
  fs::path canonical = fs::canonical(path, ec);
  if (ec || !fs::is_directory(canonical, ec)) return std::nullopt;
  return canonical;
}

}  // namespace

std::optional<LinkedWorktree> linked_worktree(const fs::path& project, std::string* why) {
  const fs::path dot_git = project / ".git";
  struct stat st {};
  if (::lstat(dot_git.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  auto refuse = [&](const std::string& reason) -> std::optional<LinkedWorktree> {
    *why = ".git is a file, but " + reason + ": no git directory is shared";
    return std::nullopt;
  };
  auto line = first_line(dot_git);
  constexpr std::string_view kPrefix = "gitdir: ";
  if (!line || line->rfind(kPrefix, 0) != 0) return refuse("it does not start with \"gitdir: \"");
  fs::path named = line->substr(kPrefix.size());
  auto git_dir = canonical_dir(named.is_absolute() ? named : project / named);
  if (!git_dir) return refuse("its git dir " + named.string() + " is not a directory");
  auto back = first_line(*git_dir / "gitdir");
  std::error_code ec;
  if (!back || !fs::equivalent(fs::path(*back), dot_git, ec)) {
    return refuse(git_dir->string() + " is not a worktree of this project (its gitdir file names another)");
  }
  auto common = first_line(*git_dir / "commondir");
  if (!common) return refuse(git_dir->string() + " has no commondir file");
  fs::path common_named = *common;
  auto common_dir = canonical_dir(common_named.is_absolute() ? common_named : *git_dir / common_named);
  if (!common_dir || git_dir->parent_path() != *common_dir / "worktrees") {
    return refuse(git_dir->string() + " is not in its common dir's worktrees/");
  }
  return LinkedWorktree{*git_dir, *common_dir};
}

}  // namespace tnk::state
