#include "core/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>

#include "core/unique_fd.h"

namespace tnk {
namespace fs = std::filesystem;

Result<std::string> read_file(const fs::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return sys_error(errno, "cannot read " + path.string());
  return read_all(fd.get(), path);
}

Result<std::string> read_all(int fd, const fs::path& path) {
  std::string content;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error(errno, "cannot read " + path.string());
    if (n == 0) break;
    content.append(buf, static_cast<size_t>(n));
  }
  return content;
}

Status write_all(int fd, const std::string& data, const std::string& what) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error(errno, "cannot write " + what);
    done += static_cast<size_t>(n);
  }
  return ok_status();
}

Status write_file_atomic(const fs::path& path, const std::string& content, mode_t mode) {
  fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::random_device rd;
  fs::path tmp = dir / ("." + path.filename().string() + ".tmp-" + std::to_string(rd()));
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!fd.valid()) return sys_error(errno, "cannot create " + tmp.string());
  auto fail = [&](int err, const std::string& what) {
    ::unlink(tmp.c_str());
    return sys_error(err, what);
  };
  if (::fchmod(fd.get(), mode) != 0) return fail(errno, "cannot chmod " + tmp.string());
  if (auto st = write_all(fd.get(), content, tmp.string()); !st) {
    ::unlink(tmp.c_str());
    return st;
  }
  if (::fsync(fd.get()) != 0) return fail(errno, "cannot fsync " + tmp.string());
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail(errno, "cannot replace " + path.string());
  UniqueFd dirfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dirfd.valid()) ::fsync(dirfd.get());  // best effort: the rename itself already happened
  return ok_status();
}

Status make_dirs(const fs::path& path, mode_t mode) {
  if (path.empty()) return ok_status();
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return ok_status();
    return failed(path.string() + " exists and is not a directory", "move it away and try again");
  }
  if (path.has_parent_path() && path.parent_path() != path) {
    TNK_RETURN_IF_ERROR(make_dirs(path.parent_path(), mode));
  }
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
    return sys_error(errno, "cannot create directory " + path.string());
  }
  return ok_status();
}

Status write_kernel_file(const std::filesystem::path& path, const std::string& value) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return sys_error(errno, "opening " + path.string());
  ssize_t n = ::write(fd.get(), value.data(), value.size());
  if (n != static_cast<ssize_t>(value.size())) {
    return sys_error(n < 0 ? errno : EIO, "writing \"" + value.substr(0, value.find('\n')) + "\" to " + path.string());
  }
  return ok_status();
}

}  // namespace tnk
