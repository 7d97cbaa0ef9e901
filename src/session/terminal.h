// The client's terminal during an interactive session: raw mode for the life of a RawMode object
// (restored on every way out of scope), and the window size to send to the sandbox.
#pragma once

#include <termios.h>

#include <optional>

#include "core/result.h"
#include "session/messages.h"

namespace tnk::session {

class RawMode {
 public:
  // Saves the modes of terminal `fd` and switches it to raw mode (as ssh does: no echo, no line
  // editing, no signal keys, no output processing), so Ctrl-C and Ctrl-Z reach the sandbox as bytes.
  static Result<RawMode> enter(int fd);

  RawMode(RawMode&& other) noexcept;
  RawMode& operator=(RawMode&&) = delete;
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;
  ~RawMode() { restore(); }

  void restore();  // idempotent

 private:
  RawMode(int fd, const termios& saved) : fd_(fd), saved_(saved) {}
  int fd_ = -1;
  termios saved_{};
};

// The window size of terminal `fd`, nullopt when it is not a terminal or reports 0x0.
std::optional<Resize> window_size(int fd);

}  // namespace tnk::session
