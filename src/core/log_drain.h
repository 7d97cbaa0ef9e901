// A thread that copies what a pipe or a socket carries into a CappedLog as fast as it comes, so that
// the writer on the other end (QEMU's serial console, the supervisor's stderr) neither waits on the
// disk nor fills it.
#pragma once

#include <memory>
#include <thread>

#include "core/capped_log.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk {

class LogDrain {
 public:
  // Copies from `source` (the read end of a pipe, or a connected socket) until its end.
  static Result<std::unique_ptr<LogDrain>> start(UniqueFd source, CappedLog log);
  // Accepts one connection on the listening socket `listener` first (the writer connects when it starts).
  static Result<std::unique_ptr<LogDrain>> accept_one(UniqueFd listener, CappedLog log);

  // Copies what the source already holds, then ends the thread.
  ~LogDrain();
  LogDrain(const LogDrain&) = delete;
  LogDrain& operator=(const LogDrain&) = delete;

 private:
  LogDrain(UniqueFd source, bool listening, CappedLog log, UniqueFd stop)
      : source_(std::move(source)), listening_(listening), log_(std::move(log)), stop_(std::move(stop)) {}
  static Result<std::unique_ptr<LogDrain>> launch(UniqueFd source, bool listening, CappedLog log);
  void run();
  bool accept_pending();  // a waiting connection becomes the source; false when the listener fails
  bool copy_available();  // false at the source's end

  UniqueFd source_;
  bool listening_ = false;  // source_ is a listener until its one connection is accepted
  CappedLog log_;
  UniqueFd stop_;  // an eventfd, written by the destructor
  std::thread thread_;
};

}  // namespace tnk
