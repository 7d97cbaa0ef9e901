// What runs a sandbox under a supervisor: the part that differs between backends. The supervisor
// owns the control socket, sessions, relays and cleanup; an Engine owns the sandbox itself.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "core/result.h"
#include "core/unique_fd.h"
#include "net/dial.h"
#include "session/protocol.h"
#include "supervisor/config.h"

namespace tnk::supervisor {

// How the supervisor names a session. ns: the session's host pid (a child of the supervisor, whose exit
// is the session's exit). vm: a number the engine assigns (the session runs in the guest).
using SessionKey = int64_t;

struct StartedSession {
  SessionKey key = 0;
  long long pid = 0;    // shown to the client: the host pid (ns) or the guest pid (vm, 0 when unknown)
  UniqueFd pty_master;  // when the session has a terminal
};

struct EndedSession {
  SessionKey key = 0;
  int exit_code = 0;  // the shell convention: status, 128+signal, 127 not found
};

class Engine {
 public:
  virtual ~Engine() = default;
  // Creates and starts the sandbox; returns notes about what it could not apply.
  virtual Result<std::vector<std::string>> start() = 0;
  // Starts one session. `stdio` holds stdin, stdout and stderr when the request has no terminal.
  virtual Result<StartedSession> spawn(const session::ExecRequest& request, const std::vector<UniqueFd>& stdio) = 0;
  // Where a session reaches what listen_inside() serves (ns: 127.0.0.1; vm: the guestfwd address).
  virtual std::string relay_host() const { return "127.0.0.1"; }
  // A listener reached from inside the sandbox at relay_host():port, for relays run by the supervisor.
  virtual Result<UniqueFd> listen_inside(uint16_t port) = 0;
  // A listener for what sessions send to the unix socket `path` inside the sandbox, open to its every user
  // (the SSH agent's, supervisor/ssh_agent_relay.h). By default one at relay_host():`relay_port`, to which
  // the guest agent relays its own socket at `path` (vm: guest/bridge.h); ns makes the socket itself.
  virtual Result<UniqueFd> listen_unix_inside(const std::string& /*path*/, uint16_t relay_port) {
    return listen_inside(relay_port);
  }
  // Called in a forked, single-threaded child before connect_inside() (a port forward's relay, the
  // proxy health check): ns joins the sandbox's network namespace, vm the one QEMU runs in.
  virtual Status enter_network() = 0;
  // Then, in that child: a nonblocking TCP connection to `ip`:`port` as a process in the sandbox would
  // open it (127.0.0.1: the sandbox's own loopback; relay_host(): the supervisor's relays). ns connects
  // directly; vm asks the guest agent's connect bridge (agent/bridge.h).
  virtual Result<UniqueFd> connect_inside(const std::string& ip, uint16_t port, net::Clock::time_point deadline,
                                          int stop_fd) {
    TNK_ASSIGN_OR_RETURN(std::vector<net::Endpoint> endpoints, net::resolve_tcp(ip, port, deadline, stop_fd));
    TNK_ASSIGN_OR_RETURN(auto connected, net::connect_any(endpoints, deadline, stop_fd));
    return std::move(connected.first);
  }
  // Whether `pid` is the sandbox itself (its end is the sandbox's end), and what to do once the
  // supervisor has reaped it without a stop() (it crashed or was killed).
  virtual bool is_sandbox_process(pid_t pid) const = 0;
  virtual void sandbox_ended(pid_t reaped) = 0;
  // What `pid` (a sandbox process) is, for messages: "PID 1", "QEMU", ...
  virtual std::string sandbox_process_name(pid_t /*pid*/) const { return "PID 1"; }
  // Why the sandbox ended by itself, when the engine knows more than a reaped process's wait status (a
  // vm whose disk's host file system filled: QEMU was told to quit). The sessions still running end with
  // this error rather than a status, so that the command that waited says what happened.
  virtual std::optional<Error> failure() const { return std::nullopt; }
  // How many processes the kernel's OOM killer has killed at the sandbox's memory limit so far (an
  // engine whose sandbox has no memory cgroup of its own: 0), so that a session it ended says so.
  virtual uint64_t oom_kills() const { return 0; }
  // Sessions that are not children of the supervisor report their end through this fd (readable when
  // ended_sessions() has something); -1 when every session is a reaped child whose pid is its key.
  virtual int session_events_fd() const { return -1; }
  virtual std::vector<EndedSession> ended_sessions() { return {}; }
  // To the session's process group; best effort (a session that just ended is no error).
  virtual void signal_session(SessionKey key, int sig) = 0;
  // The terminal's new size, beyond the host pty the supervisor already resized.
  virtual void resize_session(SessionKey /*key*/, unsigned short /*rows*/, unsigned short /*cols*/) {}
  // Ends everything in the sandbox: graceful first, forced after `grace`.
  virtual Status stop(std::chrono::milliseconds grace) = 0;
  // Holds every process of the sandbox still (`held`), or lets them go on: a checkpoint or a fork copies
  // the sandbox's files meanwhile (docs/checkpoints.md).
  virtual Status pause(bool /*held*/) { return failed("this sandbox cannot be paused", "stop it first"); }
  // Debugging and bench/vm.sh: `count` round trips of the guest agent's ping frame, in order. Blocks
  // the supervisor's loop while it runs. Fails for an engine that has no guest agent.
  virtual Result<std::vector<std::chrono::microseconds>> agent_pings(int /*count*/) {
    return failed("this sandbox has no guest agent to ping", "agent-ping needs a vm sandbox");
  }
};

// Makes the engine of config.backend. The supervisor is handed one (backend/supervised/engines.h):
// it knows no engine by name.
using EngineFactory = std::function<Result<std::unique_ptr<Engine>>(const SupervisorConfig& config)>;

}  // namespace tnk::supervisor
