#include "review/tree.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/files.h"
#include "core/nofollow_dir.h"

namespace tnk::review {

std::string join_rel(const std::string& dir, const std::string& name) { return dir.empty() ? name : dir + "/" + name; }

std::pair<std::string, std::string> split_rel(const std::string& rel) {
  size_t slash = rel.rfind('/');
  if (slash == std::string::npos) return {"", rel};
  return {rel.substr(0, slash), rel.substr(slash + 1)};
}

Result<UniqueFd> open_dir_below(int top, const std::string& rel, int create_mode) {
  UniqueFd current(::fcntl(top, F_DUPFD_CLOEXEC, 0));
  if (!current.valid()) return sys_error(errno, "duplicating a directory fd");
  size_t start = 0;
  while (start < rel.size()) {
    size_t end = rel.find('/', start);
    if (end == std::string::npos) end = rel.size();
    std::string name = rel.substr(start, end - start);
    start = end + 1;
    if (name.empty() || name == ".") continue;
    if (name == "..") return failed("the path " + rel + " leaves its tree", "name it without ..");
    if (create_mode >= 0 && ::mkdirat(current.get(), name.c_str(), static_cast<mode_t>(create_mode)) != 0 &&
        errno != EEXIST) {
      return sys_error(errno, "creating the directory " + rel.substr(0, end));
    }
    // O_NOFOLLOW with O_DIRECTORY fails with ENOTDIR on a symlink: never followed.
    UniqueFd next(::openat(current.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next.valid()) {
      int err = errno;
      if (err == ENOTDIR || err == ELOOP) {
        return permission_denied(rel.substr(0, end) + " is not a directory (or is a symbolic link): not followed");
      }
      return sys_error(err, "opening " + rel.substr(0, end));
    }
    current = std::move(next);
  }
  return current;
}

Result<bool> stat_below(int top, const std::string& rel, struct stat* st) {
  auto [parent, name] = split_rel(rel);
  Result<UniqueFd> dir = open_dir_below(top, parent);
  if (!dir) return false;  // a parent missing or not a directory: the path does not exist as such
  if (::fstatat(dir->get(), name.c_str(), st, AT_SYMLINK_NOFOLLOW) == 0) return true;
  if (errno == ENOENT || errno == ENOTDIR) return false;
  return sys_error(errno, "checking " + rel);
}

Result<std::string> read_file_below(int top, const std::string& rel, const std::string& what, uint64_t max_size) {
  auto [parent, name] = split_rel(rel);
  TNK_ASSIGN_OR_RETURN(UniqueFd dir, open_dir_below(top, parent));
  UniqueFd file(::openat(dir.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!file.valid()) return sys_error(errno, "reading " + rel + " in " + what);
  struct stat st {};
  if (::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return failed("reading " + rel + " in " + what + ": it is not a regular file", "run the command again");
  }
  if (static_cast<uint64_t>(st.st_size) > max_size) {
    return failed("reading " + rel + " in " + what + ": it is larger than " + std::to_string(max_size) + " bytes",
                  "run the command again");
  }
  return read_all(file.get(), rel);
}

Result<std::string> read_link_below(int top, const std::string& rel, const std::string& what) {
  auto [parent, name] = split_rel(rel);
  TNK_ASSIGN_OR_RETURN(UniqueFd dir, open_dir_below(top, parent));
  char buf[4096];
  ssize_t n = ::readlinkat(dir.get(), name.c_str(), buf, sizeof buf);
  if (n < 0) return sys_error(errno, "reading the link " + rel + " in " + what);
  return std::string(buf, static_cast<size_t>(n));
}

Result<std::vector<std::string>> list_dir(int dir, const std::string& what) {
  TNK_ASSIGN_OR_RETURN(std::vector<std::string> names, dir_names(dir, what));
  std::sort(names.begin(), names.end());
  return names;
}

Status remove_tree(int parent, const std::string& name, const std::string& what) {
  if (::unlinkat(parent, name.c_str(), 0) == 0 || errno == ENOENT) return ok_status();
  if (errno != EISDIR && errno != EPERM) return sys_error(errno, "removing " + what);
  UniqueFd dir(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.valid()) return sys_error(errno, "opening " + what);
  TNK_ASSIGN_OR_RETURN(auto names, list_dir(dir.get(), what));
  for (const auto& child : names) TNK_RETURN_IF_ERROR(remove_tree(dir.get(), child, what + "/" + child));
  if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0) return sys_error(errno, "removing " + what);
  return ok_status();
}

}  // namespace tnk::review
