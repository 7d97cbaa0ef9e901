#include "core/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <thread>

namespace tnk {
namespace {

enum class Try { kLocked, kBusy, kUnlinked };

// One non-blocking attempt on `fd` (opened on `path`). The holder may have deleted the file (sandbox
// delete, image rm) while we waited: a lock on an unlinked file excludes nobody, so the caller starts
// over on the file that is there now.
Result<Try> try_lock(int fd, const std::filesystem::path& path) {
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) return Try::kBusy;
    return sys_error(errno, "cannot lock " + path.string());
  }
  struct stat held {
  }, now{};
  bool linked = ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
                held.st_dev == now.st_dev;
  return linked ? Try::kLocked : Try::kUnlinked;
}

Result<UniqueFd> open_lock_file(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return sys_error(errno, "cannot open lock " + path.string());
  return fd;
}

}  // namespace

Result<FileLock> FileLock::acquire(const std::filesystem::path& path, std::chrono::milliseconds timeout,
                                   const std::function<void()>& on_wait, const std::string& busy_hint) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool told = false;
  UniqueFd fd;
  for (;;) {
    if (!fd.valid()) {
      TNK_ASSIGN_OR_RETURN(fd, open_lock_file(path));
    }
    TNK_ASSIGN_OR_RETURN(Try got, try_lock(fd.get(), path));
    if (got == Try::kLocked) return FileLock(std::move(fd));
    if (got == Try::kUnlinked) {
      fd.reset();
      continue;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return failed("timed out waiting for lock " + path.string(), busy_hint);
    }
    if (!told && on_wait) on_wait();
    told = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Result<std::optional<FileLock>> FileLock::try_acquire(const std::filesystem::path& path) {
  TNK_ASSIGN_OR_RETURN(UniqueFd fd, open_lock_file(path));
  TNK_ASSIGN_OR_RETURN(Try got, try_lock(fd.get(), path));
  if (got != Try::kLocked) return std::optional<FileLock>();
  return std::optional<FileLock>(FileLock(std::move(fd)));
}

}  // namespace tnk
