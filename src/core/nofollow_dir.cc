#include "core/nofollow_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace tnk {
namespace fs = std::filesystem;
namespace {

constexpr int kDirFlags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// Why openat(O_NOFOLLOW | O_DIRECTORY) of `name` failed with ENOTDIR or ELOOP: a link or a file.
Error not_a_directory(int parent, const fs::path& name, const fs::path& so_far) {
  struct stat st {};
  if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
    return permission_denied("refusing to follow " + so_far.string() + ": it is a symbolic link",
                             "give the path with links resolved, in a directory that only you can change");
  }
  return failed(so_far.string() + " exists and is not a directory", "move it away and try again");
}

}  // namespace

Result<UniqueFd> open_dir_nofollow(const fs::path& dir, std::optional<mode_t> create_mode) {
  if (!dir.is_absolute()) return failed("cannot open directory " + dir.string() + ": the path is not absolute");
  fs::path normal = dir.lexically_normal();
  UniqueFd fd(::open("/", kDirFlags));
  if (!fd.valid()) return sys_error(errno, "cannot open /");
  fs::path so_far = "/";
  for (const auto& name : normal.relative_path()) {
    if (name.empty()) continue;  // a trailing separator
    so_far /= name;
    UniqueFd next(::openat(fd.get(), name.c_str(), kDirFlags));
    if (!next.valid() && errno == ENOENT && create_mode) {
      if (::mkdirat(fd.get(), name.c_str(), *create_mode) != 0 && errno != EEXIST) {
        return sys_error(errno, "cannot create directory " + so_far.string());
      }
      next = UniqueFd(::openat(fd.get(), name.c_str(), kDirFlags));
    }
    if (!next.valid()) {
      if (errno == ENOTDIR || errno == ELOOP) return not_a_directory(fd.get(), name, so_far);
      return sys_error(errno, "cannot open directory " + so_far.string());
    }
    fd = std::move(next);
  }
  return fd;
}

Result<std::vector<std::string>> dir_names(int dirfd, const std::string& path) {
  int copy = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (copy < 0) return sys_error(errno, "cannot open directory " + path);
  DIR* dir = ::fdopendir(copy);
  if (dir == nullptr) {
    int e = errno;
    ::close(copy);
    return sys_error(e, "cannot read directory " + path);
  }
  std::vector<std::string> names;
  errno = 0;
  while (dirent* d = ::readdir(dir)) {
    std::string name = d->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  int e = errno;
  ::closedir(dir);
  if (e != 0) return sys_error(e, "cannot read directory " + path);
  return names;
}

}  // namespace tnk
