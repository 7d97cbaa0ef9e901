#include "core/capped_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace tnk {

Result<CappedLog> CappedLog::open(const std::filesystem::path& path, uint64_t cap, bool fresh) {
  if (cap == 0) return usage_error("a capped log needs a cap above zero");
  CappedLog log(path, cap);
  if (fresh && ::unlink(log.rotated_path().c_str()) != 0 && errno != ENOENT) {
    return sys_error(errno, "removing " + log.rotated_path().string());
  }
  TNK_RETURN_IF_ERROR(log.reopen(fresh));
  return log;
}

std::filesystem::path CappedLog::rotated_path() const { return path_.string() + ".1"; }

Status CappedLog::reopen(bool truncate) {
  int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | (truncate ? O_TRUNC : 0);
  fd_.reset(::open(path_.c_str(), flags, 0600));
  if (!fd_.valid()) return sys_error(errno, "opening " + path_.string());
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) return sys_error(errno, "stat " + path_.string());
  size_ = static_cast<uint64_t>(st.st_size);
  return ok_status();
}

// rename() replaces <path>.1 itself, never what a link there points to.
Status CappedLog::rotate() {
  if (::rename(path_.c_str(), rotated_path().c_str()) != 0) {
    return sys_error(errno, "rotating " + path_.string());
  }
  return reopen(true);
}

Status CappedLog::append(std::string_view bytes) {
  while (!bytes.empty()) {
    // Checked again after each: a file reopened after a failed rotation may already be full.
    if (!fd_.valid()) {
      TNK_RETURN_IF_ERROR(reopen(false));
      continue;
    }
    if (size_ >= cap_) {
      TNK_RETURN_IF_ERROR(rotate());
      continue;
    }
    size_t room = static_cast<size_t>(std::min<uint64_t>(cap_ - size_, bytes.size()));
    ssize_t n = ::write(fd_.get(), bytes.data(), room);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error(errno, "writing " + path_.string());
    size_ += static_cast<uint64_t>(n);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return ok_status();
}

}  // namespace tnk
