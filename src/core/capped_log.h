// A log file that cannot grow without bound, for text a sandbox can make someone write (a vm guest's
// console, the supervisor's and its relays' output): at most two files of `cap` bytes, the current one
// and the one before it (<path>.1). The writer is owned by one thread (log_drain.h runs one).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk {

inline constexpr uint64_t kLogCapBytes = 4ull << 20;  // serial.log and supervisor.log: 4 MiB each, twice

class CappedLog {
 public:
  // Opens `path` for appending (created 0600, never through a symlink). `fresh`: empty, and an old
  // <path>.1 removed (a new run's log); else what the file holds counts against the cap.
  static Result<CappedLog> open(const std::filesystem::path& path, uint64_t cap, bool fresh);

  // Appends `bytes`. Each time the file reaches the cap it becomes <path>.1 (the older one is dropped)
  // and a new file starts, so no file ever holds more than `cap` bytes and the two together keep the
  // latest 1-2 caps' worth. An error leaves the log usable: the next append tries again.
  Status append(std::string_view bytes);

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path rotated_path() const;

 private:
  CappedLog(std::filesystem::path path, uint64_t cap) : path_(std::move(path)), cap_(cap) {}
  Status reopen(bool truncate);
  Status rotate();

  std::filesystem::path path_;
  uint64_t cap_ = 0;
  UniqueFd fd_;
  uint64_t size_ = 0;  // what the current file holds
};

}  // namespace tnk
