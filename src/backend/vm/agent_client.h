// The host side of the agent protocol (docs/agent-protocol.md): one connection to a guest's tnk-agent
// (QEMU's chardev socket for the agent's virtio-serial port), many sessions over it. The client moves
// the bytes of each session between the agent and fds the caller gives it, with the protocol's flow
// control, so one slow reader never makes the supervisor buffer without bound.
//
// Threading rules:
// - The client owns one pump thread that does all I/O, on the connection and on the sessions' fds.
// - Every public method may be called from any thread. ping(), put_file() and poweroff() block until the
//   answer comes (or their timeout); called from an exit callback they fail at once instead.
// - Exit callbacks run on the pump thread, without the client's lock: they may call start(), resize()
//   and signal(), and should be quick (the pump waits for them). A single-threaded supervisor writes to
//   an eventfd or pipe that its own poll loop watches.
// - The destructor stops the pump and closes the connection (the agent kills the sessions still
//   running); their callbacks run from the destructor with code kExitLost.
// - After fork(), a child must not touch the client (its pump thread does not exist there).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "agent/messages.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::vm {

using SessionId = uint32_t;

// The caller's ends of a session. The client takes them over and makes them non-blocking, so they
// must not share an open file description with anyone who expects blocking I/O (pipes made for the
// session, or fds received by SCM_RIGHTS for it, are right).
struct SessionIo {
  // Without a terminal: `input` is read until EOF (then the program sees EOF on its stdin); the program's
  // stdout goes to `output` and its stderr to `errors`. An invalid fd means empty stdin, or output dropped.
  UniqueFd input, output, errors;
  // With a terminal (ExecRequest::tty): one fd both read (keystrokes) and written (the screen), e.g. the
  // slave of a host PTY in raw mode whose master the supervisor hands to the CLI.
  UniqueFd terminal;
};

inline constexpr int kExitLost = 255;  // the connection to the agent ended before the session did

struct SessionExit {
  int code = 0;       // exit status; 128+n for signal n; 127 not found; 126 not started; kExitLost
  int signal = 0;     // the signal that ended the program, 0 when it exited
  std::string error;  // why it did not start or was lost; empty after a normal exit
};

// Called once per session, after everything the program wrote has been written to the session's fds
// (and those fds are closed).
using ExitCallback = std::function<void(SessionId, const SessionExit&)>;

struct ClientOptions {
  std::chrono::milliseconds connect_timeout{10000};  // retry while QEMU has not created the socket yet
  std::chrono::milliseconds hello_timeout{60000};    // the guest may still be booting
};

class AgentClient {
 public:
  // Connects to the unix socket at `socket_path` and says hello with `token`. Returns once the agent
  // answered, which is the guest's readiness.
  static Result<std::unique_ptr<AgentClient>> connect(const std::filesystem::path& socket_path,
                                                      const std::string& token, const ClientOptions& options = {});
  // The same over an already connected stream (tests use a socketpair).
  static Result<std::unique_ptr<AgentClient>> attach(UniqueFd stream, const std::string& token,
                                                     std::chrono::milliseconds hello_timeout);
  ~AgentClient();
  AgentClient(const AgentClient&) = delete;
  AgentClient& operator=(const AgentClient&) = delete;

  std::string agent_name() const;        // from hello-ok: "tnk-agent <version>"
  std::optional<Error> failure() const;  // why the connection ended, once it has

  // The round trip of one ping frame.
  Result<std::chrono::microseconds> ping(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Starts a session; its end is reported through `on_exit` (also when the program could not start:
  // code 127 or 126 with the reason in `error`, which is also written to the session's stderr, or its
  // terminal, as "tnk: <reason>"). Fails when the request cannot be sent (too large for
  // one frame, not UTF-8, tty without a terminal fd, connection lost).
  Result<SessionId> start(const agent::ExecRequest& request, SessionIo io, ExitCallback on_exit);
  // Best effort: a session that has just ended is no error.
  Status resize(SessionId id, uint16_t rows, uint16_t cols);
  Status signal(SessionId id, int sig);  // to the session's process group
  // Writes `content` to a file in the guest (atomically: temporary file, then rename).
  Status put_file(const agent::FilePut& file, std::string_view content,
                  std::chrono::milliseconds timeout = std::chrono::seconds(60));
  // Tells the guest the host's time (after QEMU held it paused: its clock stood still meanwhile). Best
  // effort: an agent too old to know the message answers with an error that is only logged.
  Status set_clock();
  // Asks the agent to power the guest off; returns once it acknowledged (it then syncs and powers off).
  Status poweroff(std::chrono::milliseconds timeout = std::chrono::seconds(5));

  class Pump;  // the implementation (client_pump.cc)

 private:
  explicit AgentClient(std::unique_ptr<Pump> pump);
  std::unique_ptr<Pump> pump_;
};

}  // namespace tnk::vm
