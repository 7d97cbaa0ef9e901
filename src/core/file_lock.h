// An exclusive flock on a file, held by this object and released on destruction.
// The kernel drops it when the process dies, so there is no stale-lock cleanup to get wrong.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>

#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk {

class FileLock {
 public:
  // Waits up to `timeout` for the lock; `on_wait` is called once if the lock is busy.
  static Result<FileLock> acquire(const std::filesystem::path& path, std::chrono::milliseconds timeout,
                                  const std::function<void()>& on_wait = {});
  FileLock(FileLock&&) = default;
  FileLock& operator=(FileLock&&) = default;

 private:
  explicit FileLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace tnk
