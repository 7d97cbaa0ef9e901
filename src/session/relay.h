// The poll loop of one client session (used by run_session in client.cc): waits for the started event,
// then moves bytes between the client's stdio and the session's pipes or PTY master, forwards signals
// and window sizes, and stops at the exit event after draining what is already readable.
#pragma once

#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/signal_scope.h"
#include "core/unique_fd.h"
#include "session/client.h"

namespace tnk::session {

class Relay {
 public:
  Relay(int sock, SignalScope& signals, const ClientOptions& options, bool tty);

  // Non-tty mode: the client's ends of the session's stdin, stdout and stderr pipes.
  void set_pipes(UniqueFd stdin_w, UniqueFd stdout_r, UniqueFd stderr_r);

  Result<SessionResult> run();

  // True once the supervisor ended the session itself (exit or error event); otherwise the caller
  // shuts the socket down so that the supervisor kills whatever it started.
  bool finished() const { return finished_; }

 private:
  struct Output {
    UniqueFd fd;  // a pipe's read end, or the PTY master (tty mode: also the input target)
    int stream = 1;
    int dest = -1;
    bool dest_ok = true;
  };
  using Step = Result<std::optional<SessionResult>>;

  Step wait_started();
  Status adopt_master(std::vector<UniqueFd>& fds);
  Step step();
  Step read_control();
  Step handle_signals();
  Step refused(const nlohmann::json& body);
  Status send_control(const nlohmann::json& body);
  Status send_resize();
  int target_fd() const;
  void read_input();
  void flush_input();
  void stop_input();
  void read_output(Output& o);
  void deliver(Output& o, std::string_view bytes);
  void drain();
  void drain_pipe(Output& o);
  void drain_terminal(Output& o);

  int sock_;
  SignalScope& signals_;
  const ClientOptions& options_;
  bool tty_;
  UniqueFd stdin_w_;
  std::vector<Output> outputs_;
  bool input_open_;
  std::string pending_;  // read from in_fd, not yet written to the target
  std::optional<std::chrono::steady_clock::time_point> last_forward_;
  bool winch_pending_ = false;
  bool finished_ = false;
  std::vector<char> buffer_;
};

}  // namespace tnk::session
