// The agent's protocol server (tnk-agent side; in src/agent/ so the unit tests run the very same loop
// on the host over a socketpair). One poll loop serves one host connection: hello and token check,
// ping, exec sessions with pipes or a PTY, stdin/stdout/stderr with flow control, resize, signals,
// exit statuses, file copy and poweroff. It reaps every child of the process (PID 1's duty in the guest).
// Single-threaded; it blocks SIGCHLD (read through a signalfd) and ignores SIGPIPE in this process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "agent/frame.h"
#include "core/result.h"
#include "core/unique_fd.h"
#include "guest/files.h"
#include "guest/session.h"

namespace tnk::guest {

inline constexpr std::size_t kMaxSessions = 256;          // running sessions plus open file transfers
inline constexpr std::size_t kMaxQueuedToHost = 1 << 20;  // past this, the agent stops reading anything

struct ServerOptions {
  std::string token;  // the hello must carry exactly this
  std::string agent_name = "tnk-agent";
};

// How one connection ended.
enum class ConnectionEnd {
  kClosed,    // the host closed it (or it broke): its sessions were killed
  kRefused,   // the host broke the protocol; a fatal error frame told it why
  kPoweroff,  // the host asked for a poweroff, and got its poweroff-ok
};

class AgentServer {
 public:
  static Result<std::unique_ptr<AgentServer>> create(ServerOptions options);
  ~AgentServer();

  // Serves one connection on `fd` (made non-blocking) until it ends. Sessions still running then are
  // killed (their process groups) and reaped; partial file transfers are removed.
  Result<ConnectionEnd> serve(int fd);
  // Accepts connections on a listening socket one after another and serves each; returns on poweroff.
  Status serve_listener(int listen_fd);
  // Reaps every exited child without blocking; exits of sessions are recorded for their exit frames.
  void reap();
  // Readable when a child has exited (then call reap()).
  int child_fd() const { return child_fd_.get(); }

 private:
  enum class Next { kContinue, kRefuse, kPoweroff };
  class Connection;

  AgentServer(ServerOptions options, UniqueFd child_fd)
      : options_(std::move(options)), child_fd_(std::move(child_fd)) {}
  Next dispatch(Connection& c, agent::Frame& frame);
  Next greet(Connection& c, const agent::Frame& frame);
  Next exec(Connection& c, const agent::Frame& frame);
  Next to_session(Connection& c, const agent::Frame& frame);
  Next file(Connection& c, const agent::Frame& frame);
  // The host's time after a pause (kClock): CLOCK_REALTIME set to it; a failure is a non-fatal error.
  void set_clock(Connection& c, const std::string& payload);
  void end_connection();

  ServerOptions options_;
  UniqueFd child_fd_;
  std::map<uint32_t, std::unique_ptr<GuestSession>> sessions_;
  std::map<uint32_t, FileTransfer> files_;
};

}  // namespace tnk::guest
