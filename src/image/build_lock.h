// The per-image build lock (<images>/<id>.lock). Like core/file_lock.h, but the descriptor is
// reachable: the builder hands a copy to mmdebstrap, so that the lock stays held while anything of
// a build runs, even when tnk itself was killed (the next builder then waits, rather than deleting
// a tree that is still being written).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>

#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::image {

class BuildLock {
 public:
  // Waits up to `timeout`; `on_wait` is called once if the lock is busy.
  static Result<BuildLock> acquire(const std::filesystem::path& path, std::chrono::milliseconds timeout,
                                   const std::function<void()>& on_wait = {});
  // nullopt when someone holds it (or it was unlinked meanwhile); never waits.
  static Result<std::optional<BuildLock>> try_acquire(const std::filesystem::path& path);

  int fd() const { return fd_.get(); }

 private:
  explicit BuildLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace tnk::image
