// The client side of a session (`tnk sandbox shell|exec`): sends an exec request over a connected
// control socket and relays the user's stdio until the supervisor reports the exit status.
// docs/control-protocol.md describes the protocol and the client's signal rules.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string_view>

#include "core/result.h"
#include "session/protocol.h"

namespace tnk::session {

struct ClientOptions {
  int in_fd = 0, out_fd = 1, err_fd = 2;  // the client's own stdio (tests pass pipes); never set non-blocking
  // Optional copy of the session's output (provisioning -> audit log). stream is 1 or 2 (always 1 with a tty).
  std::function<void(int stream, std::string_view bytes)> tee;
  // Optional: called after each `quiet_every` in which nothing happened (no output, no input), so that a
  // long silent step (an npm install during provisioning) still shows it is alive.
  std::function<void()> on_quiet;
  std::chrono::milliseconds quiet_every{15'000};
};

// How a session ended, when it was not a failure of tnk itself.
struct SessionResult {
  // The session's exit status (128+N when killed by signal N). When the client gave up after repeated
  // signals, 128+N of the signal that made it give up. When `refused` is set, the error event's exit code.
  int exit_code = 0;
  // Set when the supervisor answered with an error event (command not found: 127, not executable: 126,
  // anything else: 1). The CLI prints it once, as any error, and exits with exit_code.
  std::optional<Error> refused;
  // The session ended because its sandbox was stopped (`"stopped": true` on the exit event).
  bool sandbox_stopped = false;
  // What the supervisor knows of how the session ended ("note" on the exit event), e.g. that the OOM
  // killer ended it at the sandbox's memory limit. The CLI prints it as a warning.
  std::string note;
};

// Runs one session on `ctl_fd` (connected; not closed here, but shut down when the session is
// abandoned so the supervisor kills what it started) and returns how it ended.
// tty mode: in_fd (when it is a terminal) is in raw mode until return, on every path; the initial window
// size comes from in_fd (else out_fd, else the request) and SIGWINCH sends a resize op; bytes relay
// in_fd -> PTY master -> out_fd. Non-tty mode: three pipes are created and their sandbox ends passed;
// in_fd -> stdin (closed at EOF), stdout -> out_fd, stderr -> err_fd.
// SIGINT, SIGTERM, SIGHUP: forwarded as a signal op; the same or another of them again within 1 s after a
// forwarded one abandons the session (exit 128+N). After the exit event only what is already readable is
// drained. Errors: the connection lost before the exit event, a protocol violation, a local I/O failure.
Result<SessionResult> run_session(int ctl_fd, const ExecRequest& request, const ClientOptions& options);

}  // namespace tnk::session
