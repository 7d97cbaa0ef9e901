// The supervisor's event loop: the control socket, the sessions it started, the relays, and the
// children it reaps. Single-threaded: everything it waits for is an fd in one poll().
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "core/result.h"
#include "core/unique_fd.h"
#include "session/protocol.h"
#include "supervisor/config.h"
#include "supervisor/engine.h"
#include "supervisor/network.h"

namespace tnk::supervisor {

// The sandbox stops looking like a running one (state/liveness.h): `failure` (if any) goes on record
// first, then the control socket and the pid file, so that in between it never reads as stopped.
void leave_running_state(const std::filesystem::path& state_dir, const Error* failure);

class Server {
 public:
  Server(SupervisorConfig config, Engine& engine, UniqueFd control, UniqueFd signals)
      : config_(std::move(config)),
        engine_(engine),
        control_(std::move(control)),
        signals_(std::move(signals)),
        network_(config_, engine) {}

  // Starts the relays the sandbox needs from the first moment (network.h).
  Status start_relays() { return network_.start(); }
  // Serves until a stop request, a termination signal, or the end of the sandbox. Then stops
  // the sandbox and tells every session how it ended. Ok when the sandbox was stopped on request.
  Status run();

 private:
  struct Connection {
    UniqueFd fd;
    SessionKey session = 0;  // the session this connection started, 0 before exec
    UniqueFd pty;            // the session's terminal, for resize
    bool provisioning = false;
    std::string audit_log;   // the session's own audit log, which gets the network records while it runs
    bool closed = false;     // finished: removed after the current loop turn
    bool greeted = false;    // its first message passed the version check
    uint64_t oom_kills = 0;  // the sandbox's OOM kills when the session started (Engine::oom_kills)
    bool pausing = false;    // it paused the sandbox, which goes on when the connection ends
  };

  void accept_connection();
  // False when the connection is done and must be finished.
  bool handle_message(Connection& conn);
  // The dispatch of a known op; false as handle_message.
  bool handle_op(Connection& conn, session::ControlOp op, session::Message& message);
  bool handle_exec(Connection& conn, session::Message& message);
  bool handle_pause(Connection& conn);
  void resize_terminal(Connection& conn, const nlohmann::json& body);
  void finish(Connection& conn);
  void handle_signal();
  void reap_children();
  void session_ended(SessionKey key, int exit_code, bool stopped = false);
  std::string oom_note(const Connection& conn, int exit_code) const;
  void engine_sessions_ended();
  nlohmann::json handle_forward(const nlohmann::json& body);
  nlohmann::json network_event(bool ask_proxy = false);
  nlohmann::json handle_policy(const nlohmann::json& body);
  int expiry_timeout_ms() const;
  void stop_sandbox(std::chrono::milliseconds grace);

  SupervisorConfig config_;
  Engine& engine_;
  UniqueFd control_;
  UniqueFd signals_;
  std::vector<std::unique_ptr<Connection>> connections_;
  Network network_;
  bool done_ = false;
  std::optional<Error> failure_;  // why the loop ended, when it was not a stop request
};

}  // namespace tnk::supervisor
