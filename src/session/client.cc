#include "session/client.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>

#include "core/signal_scope.h"
#include "session/relay.h"
#include "session/terminal.h"

namespace tnk::session {
namespace {

// The three pipes of a non-tty session: the client keeps `mine`, the sandbox gets `theirs`
// (stdin's read end, stdout's and stderr's write ends).
struct Pipes {
  std::array<UniqueFd, 3> mine, theirs;
};

Result<Pipes> make_pipes() {
  Pipes p;
  for (std::size_t i = 0; i < 3; ++i) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return sys_error(errno, "cannot create the session's pipes");
    UniqueFd r(fds[0]), w(fds[1]);
    p.mine[i] = i == 0 ? std::move(w) : std::move(r);
    p.theirs[i] = i == 0 ? std::move(r) : std::move(w);
  }
  return p;
}

// Until the exit event arrives, a connection that ends makes the supervisor kill the session's
// process group: shutting it down here covers every early return (errors, exceptions, giving up).
class ShutdownUnlessFinished {
 public:
  ShutdownUnlessFinished(int sock, const Relay& relay) : sock_(sock), relay_(relay) {}
  ~ShutdownUnlessFinished() {
    if (!relay_.finished()) ::shutdown(sock_, SHUT_RDWR);
  }
  ShutdownUnlessFinished(const ShutdownUnlessFinished&) = delete;
  ShutdownUnlessFinished& operator=(const ShutdownUnlessFinished&) = delete;

 private:
  int sock_;
  const Relay& relay_;
};

Status send_request(int sock, const ExecRequest& request, Relay& relay) {
  Status sent;
  if (request.tty) {
    sent = send_message(sock, to_json(request));
  } else {
    TNK_ASSIGN_OR_RETURN(Pipes pipes, make_pipes());
    std::array<int, 3> theirs = {pipes.theirs[0].get(), pipes.theirs[1].get(), pipes.theirs[2].get()};
    sent = send_message(sock, to_json(request), theirs);
    relay.set_pipes(std::move(pipes.mine[0]), std::move(pipes.mine[1]), std::move(pipes.mine[2]));
  }  // the sandbox's ends close here: only the supervisor's copies keep them open
  if (!sent.ok() && (sent.error().sys_errno == EPIPE || sent.error().sys_errno == ECONNRESET)) {
    return failed("lost the connection to the sandbox's supervisor before the session started",
                  "check the sandbox with `tnk sandbox ls`");
  }
  return sent;
}

}  // namespace

Result<SessionResult> run_session(int ctl_fd, const ExecRequest& request, const ClientOptions& options) {
  ExecRequest req = request;
  std::vector<int> caught = {SIGINT, SIGTERM, SIGHUP};
  if (req.tty) caught.push_back(SIGWINCH);
  // Handlers first, raw mode second: raw mode is restored before the handlers go away, so no
  // signal can end the process while the terminal is raw.
  TNK_ASSIGN_OR_RETURN(std::unique_ptr<SignalScope> signals, SignalScope::install(caught));
  std::optional<RawMode> raw;
  if (req.tty) {
    auto size = window_size(options.in_fd);
    if (!size) size = window_size(options.out_fd);
    if (size) {
      req.rows = size->rows;
      req.cols = size->cols;
    }
    if (::isatty(options.in_fd) == 1) {
      TNK_ASSIGN_OR_RETURN(RawMode mode, RawMode::enter(options.in_fd));
      raw.emplace(std::move(mode));
    }
  }
  Relay relay(ctl_fd, *signals, options, req.tty);
  ShutdownUnlessFinished guard(ctl_fd, relay);
  TNK_RETURN_IF_ERROR(send_request(ctl_fd, req, relay));
  return relay.run();
}

}  // namespace tnk::session
