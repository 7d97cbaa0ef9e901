// Thin wrappers over the system calls the ns engine needs and glibc 2.36 lacks (raw clone, pivot_root,
// capset), plus the helpers that code running after fork uses: fixed-buffer strings and the
// {step, errno} report records that forked children send to their parent over a CLOEXEC pipe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::linux::sys {

// clone(2) without a new stack: fork semantics plus `flags` (e.g. CLONE_PARENT, CLONE_NEWUSER).
// No atfork handlers run, so the caller must be single-threaded. Returns 0 in the child.
pid_t clone_process(unsigned long flags);

int pivot_root(const char* new_root, const char* put_old);

// Sets the three capability sets of the calling thread (bit n = capability n).
int set_capabilities(uint64_t effective, uint64_t permitted, uint64_t inheritable);

// A string in a fixed buffer, for code after fork. Overflow is remembered, never written past the end.
class CharBuf {
 public:
  CharBuf& add(const char* text);
  CharBuf& add_int(long value);
  const char* c_str() const { return data_; }
  bool overflowed() const { return overflow_; }

 private:
  char data_[1024] = {};
  size_t len_ = 0;
  bool overflow_ = false;
};

// "/proc/self/fd/<fd><suffix>": names an open file in mount/overlay options without a host path.
CharBuf fd_path(int fd, const char* suffix = "");

// One record a forked child sends to its parent. `step` is a Step (steps.h); `err` an errno;
// `value` a pid for the records that carry one.
struct Report {
  int32_t step = 0;
  int32_t err = 0;
  int32_t value = 0;
};

// Async-signal-safe; a record is smaller than PIPE_BUF, so it arrives whole. False when the write failed.
bool send_report(int fd, int32_t step, int err, int32_t value = 0);

// Appends records to `out` until every writer closed the pipe. Fails when `timeout` passes first
// (`out` then holds what had arrived).
Status read_reports(int fd, std::chrono::milliseconds timeout, std::vector<Report>* out);

// waitpid(pid) retrying on EINTR; returns the wait status, or -1 with errno.
int wait_for(pid_t pid);

// Opens (with `create`: making missing directories with `mode`) the directory `rel` below `root` one
// component at a time, never following a symlink. Returns an O_PATH fd, or -1 with errno.
int open_dirs_below(int root, const char* rel, bool create, unsigned mode);

}  // namespace tnk::linux::sys
