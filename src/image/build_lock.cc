#include "image/build_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <thread>

namespace tnk::image {
namespace {

// A lock on a file that was unlinked (the image was removed) while we waited excludes nobody.
bool still_linked(int fd, const std::filesystem::path& path) {
  struct stat held {
  }, now{};
  return ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
         held.st_dev == now.st_dev;
}

}  // namespace

Result<BuildLock> BuildLock::acquire(const std::filesystem::path& path, std::chrono::milliseconds timeout,
                                     const std::function<void()>& on_wait) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool told = false;
  for (;;) {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) return sys_error(errno, "cannot open lock " + path.string());
    for (;;) {
      if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) break;
      if (errno == EINTR) continue;
      if (errno != EWOULDBLOCK) return sys_error(errno, "cannot lock " + path.string());
      if (std::chrono::steady_clock::now() >= deadline) {
        return failed("timed out waiting for lock " + path.string(),
                      "another tnk process is building or removing this image; retry when it has finished");
      }
      if (!told && on_wait) on_wait();
      told = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (still_linked(fd.get(), path)) return BuildLock(std::move(fd));
  }
}

Result<std::optional<BuildLock>> BuildLock::try_acquire(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return sys_error(errno, "cannot open lock " + path.string());
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) return std::optional<BuildLock>();
    return sys_error(errno, "cannot lock " + path.string());
  }
  if (!still_linked(fd.get(), path)) return std::optional<BuildLock>();
  return std::optional<BuildLock>(BuildLock(std::move(fd)));
}

}  // namespace tnk::image
