// The bound on an ns sandbox's disk (the manifest's resources.disk; security review M5). An ordinary
// user cannot give a persistent directory a size (tmpfs forgets at stop, a loop-mounted file system
// needs host root, and overlayfs refuses fuse2fs as its upper layer), so the bound is kept by
// measuring: a watch process adds up what the sandbox's layers take on the host and ends the sandbox
// once they pass the limit. Walking the layers costs a stat per file, so the watch walks them at start,
// then only when the host file system's free space (a look every kLookInterval, almost free) has
// fallen by half the headroom left, and at least every kMaxMeasureInterval: a sandbox passes its limit
// by at most what it writes in one look's interval and one walk (docs/ns-backend.md, "Disk").
//
// Over the limit, the watch says so to the supervisor and kills the sandbox's PID 1 itself, which ends
// every process in the sandbox at once.
//
// The watch is tnk re-executed (`tnk __disk-watch LIMIT PIDFD FD NAME...`, PID 1 and each directory an
// inherited descriptor) in the sandbox's user namespace as its root: the owners of the sandbox's files
// are mapped there, so it may read every directory and signal PID 1, and nothing of the host beyond
// them. It shares no other namespace and runs nothing of the sandbox's.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "backend/ns/sandbox.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::ns {

inline constexpr const char* kDiskWatchArg = "__disk-watch";
inline constexpr std::chrono::milliseconds kLookInterval{50};
inline constexpr std::chrono::milliseconds kMaxMeasureInterval{30000};
inline constexpr uint64_t kFallTrigger = 4 << 20;  // the least fall that is worth a walk

// What the tree at `dir_fd` (O_PATH will do; `name` in errors) takes on its file system: the allocated
// blocks of every inode in it, directories included and hard links once, without following symbolic
// links or entering other mounts. Entries removed while it walks are skipped. Stops once the total
// passes `stop_above` and returns what it had then (the tree takes at least that).
Result<uint64_t> tree_bytes(int dir_fd, const std::string& name, uint64_t stop_above);

// Whether the watch walks the layers again: the host file system's free space fell from `free_then`
// (at the last walk, which found `used`) to `free_now` by half the headroom or kFallTrigger, whichever
// is more. Whatever else the host wrote meanwhile only makes the walk come sooner.
bool should_measure(uint64_t free_then, uint64_t free_now, uint64_t used, uint64_t limit);

// The watch's own main(): argv is {tnk, kDiskWatchArg, LIMIT, PIDFD, FD, NAME, ...}. Its last line on stdout says
// why it ended: "over BYTES" (exit 3) or "error MESSAGE" (exit 4); it exits 0 when its reader is gone.
int disk_watch_main(int argc, char** argv);

class DiskWatch {
 public:
  // Forks the watch (the caller's child; it dies with the caller) for `dirs`, the layers of `sandbox`.
  static Result<DiskWatch> start(const Sandbox& sandbox, const std::vector<std::filesystem::path>& dirs,
                                 uint64_t limit);

  pid_t pid() const { return pid_; }
  // Why the watch ends the sandbox, once it said so (it may not be reaped yet); nullopt before.
  std::optional<Error> verdict() const;
  // The error for a watch that ended without saying why (`why`: what it did say, if anything).
  static Error ended(const std::string& why);
  // For a caller that reaped the watch itself: nothing is left to end.
  void forget() { pid_ = 0; }

  DiskWatch(DiskWatch&& other) noexcept;
  DiskWatch& operator=(DiskWatch&& other) noexcept;
  ~DiskWatch();  // kills and reaps the watch

 private:
  DiskWatch(pid_t pid, UniqueFd report, uint64_t limit, std::filesystem::path upper)
      : pid_(pid), report_(std::move(report)), limit_(limit), upper_(std::move(upper)) {}
  void end();

  pid_t pid_ = 0;
  UniqueFd report_;  // read end of the watch's stdout
  uint64_t limit_ = 0;
  std::filesystem::path upper_;        // named in the verdict
  mutable std::optional<Error> said_;  // the verdict, once read from report_
};

}  // namespace tnk::ns
