#include "session/relay.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>

#include "session/terminal.h"

namespace tnk::session {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr auto kRepeatWindow = std::chrono::seconds(1);  // a second signal within it abandons the session
constexpr int kTtyQuietMs = 20;                          // tty drain: stop after this long without output
constexpr auto kTtyDrainMax = milliseconds(250);         // tty drain: never longer than this
constexpr std::size_t kBufferBytes = 64 * 1024;

Error lost_connection() {
  return failed("lost the connection to the sandbox's supervisor",
                "the sandbox may have been stopped or its supervisor may have crashed; check with `tnk sandbox ls`");
}

bool is_terminating(int sig) { return sig == SIGINT || sig == SIGTERM || sig == SIGHUP; }

// Writes all bytes, waiting when `fd` is full (even if someone else made it non-blocking); false on any
// error (EPIPE included: SIGPIPE is ignored during a session).
bool write_fully(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

Status set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return sys_error(errno, "cannot make a session descriptor non-blocking");
  }
  return ok_status();
}

SessionResult abandoned(int sig) { return SessionResult{128 + sig, std::nullopt, false, ""}; }

}  // namespace

Relay::Relay(int sock, SignalScope& signals, const ClientOptions& options, bool tty)
    : sock_(sock),
      signals_(signals),
      options_(options),
      tty_(tty),
      input_open_(options.in_fd >= 0),
      buffer_(kBufferBytes) {}

void Relay::set_pipes(UniqueFd stdin_w, UniqueFd stdout_r, UniqueFd stderr_r) {
  stdin_w_ = std::move(stdin_w);
  (void)set_nonblocking(stdin_w_.get());  // a private pipe: on failure writes merely block
  if (!input_open_) stdin_w_.reset();     // no input at all: the session sees EOF at once
  outputs_.push_back(Output{std::move(stdout_r), 1, options_.out_fd, true});
  outputs_.push_back(Output{std::move(stderr_r), 2, options_.err_fd, true});
}

Result<SessionResult> Relay::run() {
  TNK_ASSIGN_OR_RETURN(std::optional<SessionResult> early, wait_started());
  if (early) return std::move(*early);
  if (winch_pending_) TNK_RETURN_IF_ERROR(send_resize());
  for (;;) {
    TNK_ASSIGN_OR_RETURN(std::optional<SessionResult> end, step());
    if (!end) continue;
    if (finished_) drain();
    return std::move(*end);
  }
}

// Before the started event there is nothing to forward a signal to: a terminating one abandons.
Relay::Step Relay::wait_started() {
  for (;;) {
    pollfd p[2] = {{sock_, POLLIN, 0}, {signals_.fd(), POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return sys_error(errno, "cannot wait on the control socket");
    }
    if (p[0].revents == 0) {  // signals only: a started event already here wins (then they are forwarded)
      for (int sig : signals_.take()) {
        if (is_terminating(sig)) return std::optional(abandoned(sig));
        winch_pending_ = true;
      }
      continue;
    }
    TNK_ASSIGN_OR_RETURN(std::optional<Message> m, recv_message(sock_));
    if (!m) return lost_connection();
    TNK_RETURN_IF_ERROR(check_version(m->body, "the supervisor"));
    TNK_ASSIGN_OR_RETURN(std::string event, control_fields(m->body).string("event"));
    if (event == "error") return refused(m->body);
    if (event != "started") return failed("the sandbox's supervisor sent '" + event + "' before 'started'");
    if (tty_) TNK_RETURN_IF_ERROR(adopt_master(m->fds));
    return std::optional<SessionResult>();
  }
}

Status Relay::adopt_master(std::vector<UniqueFd>& fds) {
  if (fds.size() != 1) {
    return failed("the sandbox's supervisor sent " + std::to_string(fds.size()) +
                  " descriptors with 'started', expected the terminal");
  }
  TNK_RETURN_IF_ERROR(set_nonblocking(fds[0].get()));
  outputs_.push_back(Output{std::move(fds[0]), 1, options_.out_fd, true});
  return ok_status();
}

Relay::Step Relay::step() {
  enum { kSock, kSignals, kInput, kTarget, kOut0, kCount = kOut0 + 2 };
  std::array<pollfd, kCount> p{};
  for (auto& x : p) x = {-1, 0, 0};
  p[kSock] = {sock_, POLLIN, 0};
  p[kSignals] = {signals_.fd(), POLLIN, 0};
  int target = target_fd();
  if (input_open_ && pending_.empty() && target >= 0) p[kInput] = {options_.in_fd, POLLIN, 0};
  if (!pending_.empty() && target >= 0) p[kTarget] = {target, POLLOUT, 0};
  for (std::size_t i = 0; i < outputs_.size(); ++i) p[kOut0 + i] = {outputs_[i].fd.get(), POLLIN, 0};
  const int timeout = options_.on_quiet ? static_cast<int>(options_.quiet_every.count()) : -1;
  const int ready = ::poll(p.data(), p.size(), timeout);
  if (ready < 0) {
    if (errno == EINTR) return std::optional<SessionResult>();
    return sys_error(errno, "cannot wait for session I/O");
  }
  if (ready == 0) {
    options_.on_quiet();
    return std::optional<SessionResult>();
  }
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    if (p[kOut0 + i].revents != 0) read_output(outputs_[i]);  // POLLNVAL too: the read fails and closes it
  }
  if ((p[kInput].revents & POLLNVAL) != 0) stop_input();
  if (p[kInput].revents != 0 && input_open_) read_input();
  if (p[kTarget].revents != 0) flush_input();
  if (p[kSignals].revents != 0) {
    TNK_ASSIGN_OR_RETURN(std::optional<SessionResult> end, handle_signals());
    if (end) return end;
  }
  if (p[kSock].revents != 0) return read_control();
  return std::optional<SessionResult>();
}

Relay::Step Relay::read_control() {
  TNK_ASSIGN_OR_RETURN(std::optional<Message> m, recv_message(sock_));
  if (!m) return lost_connection();
  TNK_ASSIGN_OR_RETURN(std::string event, control_fields(m->body).string("event"));
  if (event == "exit") {
    TNK_ASSIGN_OR_RETURN(long long code, control_fields(m->body).integer("code", 0, 255));
    TNK_ASSIGN_OR_RETURN(bool stopped, control_fields(m->body).optional_boolean("stopped", false));
    TNK_ASSIGN_OR_RETURN(std::string note, control_fields(m->body).optional_string("note"));
    finished_ = true;
    return std::optional(SessionResult{static_cast<int>(code), std::nullopt, stopped, note});
  }
  if (event == "error") {
    // After "started": not a refusal but the sandbox failing under the session (a vm whose disk's host
    // file system filled). The command fails with the supervisor's error, once.
    TNK_ASSIGN_OR_RETURN(RemoteError e, remote_error_from_json(m->body));
    finished_ = true;
    return failed(e.message, e.hint);
  }
  return std::optional<SessionResult>();  // unknown events are ignored (newer supervisors may add some)
}

Relay::Step Relay::refused(const nlohmann::json& body) {
  TNK_ASSIGN_OR_RETURN(RemoteError e, remote_error_from_json(body));
  finished_ = true;
  Error error = failed(e.message, e.hint);
  if (e.exit_code == kExitCommandNotFound) error.kind = ErrorKind::kNotFound;
  if (e.exit_code == kExitCommandNotExecutable) error.kind = ErrorKind::kPermission;
  return std::optional(SessionResult{e.exit_code, std::move(error), false, ""});
}

Relay::Step Relay::handle_signals() {
  for (int sig : signals_.take()) {
    if (sig == SIGWINCH) {
      TNK_RETURN_IF_ERROR(send_resize());
      continue;
    }
    if (!is_terminating(sig)) continue;
    auto now = Clock::now();
    if (last_forward_ && now - *last_forward_ < kRepeatWindow) return std::optional(abandoned(sig));
    last_forward_ = now;
    TNK_RETURN_IF_ERROR(send_control(signal_op(sig)));
  }
  return std::optional<SessionResult>();
}

Status Relay::send_control(const nlohmann::json& body) {
  Status s = send_message(sock_, body);
  if (!s.ok() && (s.error().sys_errno == EPIPE || s.error().sys_errno == ECONNRESET)) return lost_connection();
  return s;
}

Status Relay::send_resize() {
  if (!tty_) return ok_status();
  auto size = window_size(options_.in_fd);
  if (!size) size = window_size(options_.out_fd);
  if (!size) return ok_status();
  return send_control(resize_op(size->rows, size->cols));
}

int Relay::target_fd() const {
  if (!tty_) return stdin_w_.get();
  return outputs_.empty() ? -1 : outputs_[0].fd.get();
}

void Relay::read_input() {
  ssize_t n = ::read(options_.in_fd, buffer_.data(), buffer_.size());
  if (n > 0) {
    pending_.append(buffer_.data(), static_cast<std::size_t>(n));
    flush_input();
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    stop_input();  // EOF, or EIO from a terminal that hung up
  }
}

void Relay::flush_input() {
  int target = target_fd();
  while (!pending_.empty() && target >= 0) {
    ssize_t n = ::write(target, pending_.data(), pending_.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {  // EPIPE: the session closed its stdin; stop reading the user's input
      pending_.clear();
      input_open_ = false;
      break;
    }
    pending_.erase(0, static_cast<std::size_t>(n));
  }
  if (!input_open_ && pending_.empty() && !tty_) stdin_w_.reset();  // EOF reaches the session
}

void Relay::stop_input() {
  input_open_ = false;
  flush_input();
}

void Relay::read_output(Output& o) {
  ssize_t n = ::read(o.fd.get(), buffer_.data(), buffer_.size());
  if (n > 0) return deliver(o, std::string_view(buffer_.data(), static_cast<std::size_t>(n)));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  o.fd.reset();  // EOF, or EIO from a master whose terminal has no process left
}

// A destination that fails (a closed pipe) stops getting output. For a pipe the session's end is closed
// too, so the writer gets SIGPIPE as it would outside the sandbox; a PTY is still read, to keep it moving.
void Relay::deliver(Output& o, std::string_view bytes) {
  if (options_.tee) options_.tee(o.stream, bytes);
  if (!o.dest_ok) return;
  if (write_fully(o.dest, bytes)) return;
  o.dest_ok = false;
  if (!tty_) o.fd.reset();
}

// After the exit event: only what is readable now. A background process that inherited the pipes
// or the terminal may write forever; it must not keep the client waiting.
void Relay::drain() {
  for (auto& o : outputs_) {
    if (!o.fd.valid()) continue;
    if (tty_) {
      drain_terminal(o);
    } else {
      drain_pipe(o);
    }
  }
}

// A pipe: the bytes the exited process wrote are all in the pipe already; read exactly those.
void Relay::drain_pipe(Output& o) {
  int available = 0;
  if (::ioctl(o.fd.get(), FIONREAD, &available) != 0 || available <= 0) return;
  auto left = static_cast<std::size_t>(available);
  while (left > 0 && o.fd.valid()) {
    ssize_t n = ::read(o.fd.get(), buffer_.data(), std::min(left, buffer_.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    left -= static_cast<std::size_t>(n);
    deliver(o, std::string_view(buffer_.data(), static_cast<std::size_t>(n)));
  }
}

// A PTY passes output from the slave to the master asynchronously: read until it is quiet briefly.
void Relay::drain_terminal(Output& o) {
  auto deadline = Clock::now() + kTtyDrainMax;
  while (o.fd.valid() && Clock::now() < deadline) {
    pollfd p{o.fd.get(), POLLIN, 0};
    int rc = ::poll(&p, 1, kTtyQuietMs);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return;
    read_output(o);
  }
}

}  // namespace tnk::session
