// Signals a process handles in its own poll loop (a session's relay, an image build). While a
// SignalScope lives, each listed signal becomes a byte on a pipe that the poll loop watches (the
// self-pipe trick), and SIGPIPE is ignored (a closed stdout is an EPIPE error, not a crash). The previous
// dispositions come back on destruction. A signal handler can only reach the pipe through a global, so
// there is one scope per process at a time.
#pragma once

#include <signal.h>

#include <memory>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk {

class SignalScope {
 public:
  static Result<std::unique_ptr<SignalScope>> install(const std::vector<int>& signals);
  ~SignalScope();
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

  int fd() const { return read_.get(); }  // readable when a signal arrived
  std::vector<int> take();                // the signals received since the last call, in order

 private:
  SignalScope() = default;
  struct Saved {
    int signal;
    struct sigaction action;
  };
  std::vector<Saved> saved_;
  UniqueFd read_, write_;
};

}  // namespace tnk
