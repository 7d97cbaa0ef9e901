// An exclusive flock on a file, held by this object and released on destruction.
// The kernel drops it when the process dies, so there is no stale-lock cleanup to get wrong.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk {

class FileLock {
 public:
  // Waits up to `timeout` for the lock; `on_wait` is called once if the lock is busy. A timeout is an
  // error with `busy_hint` as its hint.
  static Result<FileLock> acquire(
      const std::filesystem::path& path, std::chrono::milliseconds timeout, const std::function<void()>& on_wait = {},
      const std::string& busy_hint = "another tnk command is changing this sandbox; retry when it has finished");
  // nullopt when someone holds it (or it was unlinked meanwhile); never waits.
  static Result<std::optional<FileLock>> try_acquire(const std::filesystem::path& path);
  FileLock(FileLock&&) = default;
  FileLock& operator=(FileLock&&) = default;

  // The locked descriptor (O_CLOEXEC): a child that inherits a copy keeps the lock held while it runs,
  // even when this process dies.
  int fd() const { return fd_.get(); }

 private:
  explicit FileLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace tnk
