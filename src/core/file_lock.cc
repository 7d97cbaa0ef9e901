#include "core/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>
#include <thread>

namespace tnk {

Result<FileLock> FileLock::acquire(const std::filesystem::path& path, std::chrono::milliseconds timeout,
                                   const std::function<void()>& on_wait) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) return sys_error(errno, "cannot open lock " + path.string());
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool told = false;
  for (;;) {
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return FileLock(std::move(fd));
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
