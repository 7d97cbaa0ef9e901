// QEMU's events, read by the supervisor from a second QMP monitor (state/layout.h, kQmpEventsSocket).
// The one that matters: a write to the guest's disk found the host's file system full. QEMU's default
// for that (werror=enospc) is to pause the guest and wait, which, unwatched, left `tnk sandbox start`
// provisioning "still running" forever; watched, the sandbox ends with an error that names the disk.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::vm {

class QmpEvents {
 public:
  // Called once, on the watcher's thread, with QEMU's reason ("No space left on device").
  using OnDiskFull = std::function<void(const std::string& reason)>;

  // Connects to `socket` (QEMU creates it as it starts: retried until `timeout`, or until `gone` says
  // that QEMU has exited), asks whether the guest
  // is already paused for an I/O error, then watches on a thread of its own. When QEMU reports a disk
  // full (BLOCK_IO_ERROR with nospace, or the run state io-error), `on_full` is called and QEMU is told
  // to quit, so that the supervisor sees it end.
  static Result<std::unique_ptr<QmpEvents>> watch(const std::filesystem::path& socket,
                                                  std::chrono::milliseconds timeout, const std::function<bool()>& gone,
                                                  OnDiskFull on_full);
  ~QmpEvents();  // stops the watcher (QEMU itself is left as it is)
  QmpEvents(const QmpEvents&) = delete;
  QmpEvents& operator=(const QmpEvents&) = delete;

  // For tests: the reason QEMU gives in one line of QMP, when it says that a disk is full; "" otherwise.
  static std::string disk_full_reason(const std::string& line);

 private:
  QmpEvents(UniqueFd fd, OnDiskFull on_full) : fd_(std::move(fd)), on_full_(std::move(on_full)) {}
  void run();

  UniqueFd fd_;
  OnDiskFull on_full_;
  std::thread thread_;
};

}  // namespace tnk::vm
