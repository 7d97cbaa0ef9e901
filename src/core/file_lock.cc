#include "core/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <thread>

namespace tnk {

Result<FileLock> FileLock::acquire(const std::filesystem::path& path, std::chrono::milliseconds timeout,
                                   const std::function<void()>& on_wait) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool told = false;
  UniqueFd fd;
  for (;;) {
    if (!fd.valid()) {
      fd.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
      if (!fd.valid()) return sys_error(errno, "cannot open lock " + path.string());
    }
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
      // The holder may have deleted the directory (sandbox delete) while we waited: a lock on an
      // unlinked file excludes nobody, so start over on the file that is there now.
      struct stat held {
      }, now{};
      if (::fstat(fd.get(), &held) == 0 && ::stat(path.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
          held.st_dev == now.st_dev) {
        return FileLock(std::move(fd));
      }
      fd.reset();
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) return sys_error(errno, "cannot lock " + path.string());
    if (std::chrono::steady_clock::now() >= deadline) {
      return failed("timed out waiting for lock " + path.string(),
                    "another tnk command is changing this sandbox; retry when it has finished");
    }
    if (!told && on_wait) on_wait();
    told = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace tnk
