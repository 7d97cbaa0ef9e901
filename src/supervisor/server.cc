#include "supervisor/server.h"

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "core/files.h"
#include "core/json_fields.h"
#include "core/subprocess.h"
#include "net/live_policy.h"
#include "session/control_client.h"
#include "session/messages.h"
#include "state/layout.h"
#include "supervisor/log_line.h"
#include "supervisor/session_env.h"

namespace tnk::supervisor {

void leave_running_state(const std::filesystem::path& state_dir, const Error* failure) {
  if (failure != nullptr) (void)write_file_atomic(state_dir / state::kFailureFile, failure->message + "\n");
  std::error_code ec;
  std::filesystem::remove(state_dir / state::kControlSocket, ec);
  std::filesystem::remove(state_dir / state::kSupervisorPidFile, ec);
}

namespace {

// A client's field read so that a value of another type counts as absent: json::value() would
// throw, and a malformed message must never end the supervisor (and with it the sandbox).
std::string text_field(const nlohmann::json& body, const char* key) {
  auto text = session::control_fields(body).optional_string(key);
  return text ? *text : std::string();
}
bool flag_field(const nlohmann::json& body, const char* key) {
  auto flag = session::control_fields(body).optional_boolean(key, false);
  return flag && *flag;
}

constexpr std::chrono::milliseconds kDefaultGrace{10000};

void send_or_log(int fd, const nlohmann::json& body, std::span<const int> fds = {}) {
  Status sent = session::send_message(fd, body, fds);
  if (!sent.ok()) log_line("cannot answer a client: " + sent.error().message);
}

nlohmann::json error_event(const Error& error, int exit_code) {
  return session::error_event(error.message, error.hint, exit_code);
}

// {"op":"agent-ping","count":N}: N round trips of the guest agent's ping, for bench/vm.sh.
nlohmann::json agent_ping_event(Engine& engine, const nlohmann::json& body) {
  auto count = session::control_fields(body).integer("count", 1, session::kMaxAgentPings);
  if (!count) return error_event(count.error(), kExitUsage);
  auto rtts = engine.agent_pings(static_cast<int>(*count));
  if (!rtts) return error_event(rtts.error(), 1);
  nlohmann::json us = nlohmann::json::array();
  for (auto rtt : *rtts) us.push_back(rtt.count());
  return {{"event", "agent-pong"}, {"v", session::kProtocolVersion}, {"rtt_us", us}};
}

}  // namespace

Status Server::run() {
  while (!done_) {
    std::vector<pollfd> fds = {{signals_.get(), POLLIN, 0},
                               {control_.get(), POLLIN, 0},
                               {network_.events_fd(), POLLIN, 0},
                               {engine_.session_events_fd(), POLLIN, 0}};
    std::vector<Connection*> polled;
    for (const auto& conn : connections_) {
      fds.push_back({conn->fd.get(), POLLIN, 0});
      polled.push_back(conn.get());
    }
    if (::poll(fds.data(), fds.size(), expiry_timeout_ms()) < 0) {
      if (errno == EINTR) continue;
      failure_ = sys_error(errno, "poll");
      break;
    }
    network_.expire_rules();
    for (size_t i = 0; i < polled.size() && !done_; ++i) {
      if (fds[i + 4].revents && !polled[i]->closed && !handle_message(*polled[i])) finish(*polled[i]);
    }
    if (fds[2].revents) network_.read_events();
    if (!done_ && fds[3].revents) engine_sessions_ended();
    if (!done_ && (fds[1].revents & POLLIN)) accept_connection();
    if (!done_ && fds[0].revents) handle_signal();
    std::erase_if(connections_, [](const auto& c) { return c->closed; });
  }
  if (failure_) return *failure_;
  return ok_status();
}

void Server::handle_signal() {
  signalfd_siginfo info{};
  if (::read(signals_.get(), &info, sizeof info) != static_cast<ssize_t>(sizeof info)) return;
  if (info.ssi_signo == SIGCHLD) {
    reap_children();
    return;
  }
  log_line("signal " + std::to_string(info.ssi_signo) + ": stopping the sandbox");
  stop_sandbox(kDefaultGrace);
}

void Server::accept_connection() {
  auto fd = session::accept_control(control_.get());
  if (!fd) return;
  auto conn = std::make_unique<Connection>();
  conn->fd = std::move(*fd);
  connections_.push_back(std::move(conn));
}

bool Server::handle_message(Connection& conn) {
  auto received = session::recv_message(conn.fd.get());
  if (!received || !*received) return false;  // closed or broken: finish() ends its session
  session::Message& message = **received;
  if (!conn.greeted) {
    Status version = session::check_version(message.body, "the client");
    if (!version.ok()) {
      send_or_log(conn.fd.get(), error_event(version.error(), 1));
      return false;
    }
    conn.greeted = true;
  }
  std::string name = text_field(message.body, "op");
  std::optional<session::ControlOp> op = session::control_op_from_name(name);
  if (!op) {
    if (conn.session != 0) return true;  // a session's connection ignores what it has no use for
    send_or_log(conn.fd.get(), error_event(failed("unknown control operation '" + name + "'"), 1));
    return false;
  }
  return handle_op(conn, *op, message);
}

// Ops after a session started are best effort (a resize racing the exit is no error), and those that
// only start something (exec, network, forward, agent-ping) are ignored on a session's connection.
bool Server::handle_op(Connection& conn, session::ControlOp op, session::Message& message) {
  const nlohmann::json& body = message.body;
  const bool fresh = conn.session == 0;
  switch (op) {
    case session::ControlOp::kExec: return fresh ? handle_exec(conn, message) : true;
    case session::ControlOp::kResize: resize_terminal(conn, body); return true;
    case session::ControlOp::kSignal:
      if (auto sig = session::signal_from_json(body); sig && !fresh) engine_.signal_session(conn.session, *sig);
      return true;
    case session::ControlOp::kPing:
      send_or_log(conn.fd.get(), session::pong_event(to_string(config_.backend), ::getpid()));
      return true;
    case session::ControlOp::kStop: {
      auto grace = session::stop_grace_from_json(body);
      send_or_log(conn.fd.get(), session::stopping_event());
      stop_sandbox(grace ? *grace : kDefaultGrace);
      return true;
    }
    case session::ControlOp::kNetwork:
      if (fresh) send_or_log(conn.fd.get(), network_event(flag_field(body, "ask_proxy")));
      return true;
    case session::ControlOp::kForward:
      if (fresh) send_or_log(conn.fd.get(), handle_forward(body));
      return true;
    case session::ControlOp::kAgentPing:
      if (fresh) send_or_log(conn.fd.get(), agent_ping_event(engine_, body));
      return true;
    case session::ControlOp::kPolicy:
      if (fresh) send_or_log(conn.fd.get(), handle_policy(body));
      return true;
    case session::ControlOp::kPause: return fresh && !conn.pausing ? handle_pause(conn) : true;
  }
  return true;
}

void Server::resize_terminal(Connection& conn, const nlohmann::json& body) {
  auto size = session::resize_from_json(body);
  if (!size) return;
  if (conn.pty.valid()) {
    winsize ws{};
    ws.ws_row = size->rows;
    ws.ws_col = size->cols;
    ::ioctl(conn.pty.get(), TIOCSWINSZ, &ws);
  }
  if (conn.session != 0) engine_.resize_session(conn.session, size->rows, size->cols);
}

bool Server::handle_exec(Connection& conn, session::Message& message) {
  auto request = session::exec_request_from_json(message.body);
  if (!request) {
    send_or_log(conn.fd.get(), error_event(request.error(), 1));
    return false;
  }
  if (!request->tty && message.fds.size() != 3) {
    send_or_log(conn.fd.get(), error_event(failed("an exec without a terminal needs 3 fds"), 1));
    return false;
  }
  bool provisioning = request->provisioning;
  if (provisioning) {
    Status proxy = network_.begin_provisioning(request->egress_allow, request->egress_any);
    if (!proxy.ok()) {
      send_or_log(conn.fd.get(), error_event(proxy.error(), 1));
      return false;
    }
  }
  request->env = session_env(*request, network_.session_env(provisioning));
  conn.oom_kills = engine_.oom_kills();
  auto started = engine_.spawn(*request, message.fds);
  if (!started) {
    bool missing = started.error().kind == ErrorKind::kNotFound;
    send_or_log(conn.fd.get(), error_event(started.error(), missing ? session::kExitCommandNotFound
                                                                    : session::kExitCommandNotExecutable));
    if (provisioning) network_.end_provisioning();
    return false;
  }
  conn.session = started->key;
  conn.provisioning = provisioning;
  conn.audit_log = request->audit_log;
  network_.audit().add_log(conn.audit_log);
  nlohmann::json event = session::started_event(started->pid);
  if (started->pty_master.valid()) {
    int master = started->pty_master.get();
    send_or_log(conn.fd.get(), event, std::span<const int>(&master, 1));
    conn.pty = std::move(started->pty_master);
  } else {
    send_or_log(conn.fd.get(), event);
  }
  return true;
}

// {"op":"pause"}: the sandbox holds still until this connection ends, however it ends (the command that
// asked may be killed): a checkpoint copies its files meanwhile.
bool Server::handle_pause(Connection& conn) {
  Status paused = engine_.pause(true);
  if (!paused.ok()) {
    send_or_log(conn.fd.get(), error_event(paused.error(), exit_code_for(paused.error().kind)));
    return false;
  }
  conn.pausing = true;
  log_line("paused for a copy of its files");
  send_or_log(conn.fd.get(), {{"event", "paused"}, {"v", session::kProtocolVersion}});
  return true;
}

// A client that goes away takes its session with it: nothing it started outlives it unasked
// (background processes it detached on purpose are in their own process group and stay).
// The connection itself is closed after the current loop turn.
void Server::finish(Connection& conn) {
  if (conn.session != 0) engine_.signal_session(conn.session, SIGKILL);
  if (conn.pausing && !done_) {
    Status resumed = engine_.pause(false);
    log_line(resumed.ok() ? "resumed" : "cannot resume the sandbox: " + resumed.error().message);
  }
  conn.pausing = false;
  conn.closed = true;
}

void Server::reap_children() {
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    if (engine_.is_sandbox_process(pid)) {
      std::string name = engine_.sandbox_process_name(pid);
      engine_.sandbox_ended(pid);
      if (!done_) {
        if (auto known = engine_.failure()) {
          failure_ = *known;
        } else {
          failure_ =
              failed("the sandbox's " + name + " ended unexpectedly (wait status " + std::to_string(status) + ")");
        }
        log_line(failure_->message);
        stop_sandbox(std::chrono::milliseconds(0));
      }
    } else if (network_.owns(pid)) {
      network_.relay_ended(pid);
    } else {
      session_ended(pid, exit_code_from_wait_status(status));
    }
  }
}

void Server::engine_sessions_ended() {
  for (const EndedSession& ended : engine_.ended_sessions()) session_ended(ended.key, ended.exit_code);
}

// A session killed (SIGKILL) while the sandbox's OOM kills grew: what killed it, for the command to say.
std::string Server::oom_note(const Connection& conn, int exit_code) const {
  if (exit_code != 128 + SIGKILL || engine_.oom_kills() <= conn.oom_kills) return "";
  std::string limit = config_.memory_bytes ? std::to_string(*config_.memory_bytes >> 20) + " MiB" : "its memory limit";
  return "the kernel's OOM killer ended a process of this command: the sandbox reached its memory limit (" + limit +
         ", resources.memory of the profile's manifest); the sandbox goes on";
}

void Server::session_ended(SessionKey key, int exit_code, bool stopped) {
  if (key == 0) return;
  auto it = std::find_if(connections_.begin(), connections_.end(), [&](const auto& c) { return c->session == key; });
  if (it == connections_.end()) return;
  Connection& conn = **it;
  network_.read_events();  // the session's last connections belong in its log
  // A sandbox that the engine ended for a reason of its own (a vm whose disk filled): its sessions end
  // with that error (it may come before QEMU is reaped), rather than with a status. Everything of the
  // sandbox ends first, and the supervisor stops looking like a running sandbox (state/liveness.h):
  // the command that hears why may start it again at once, and reads it as broken, never as stopped.
  std::optional<Error> known = engine_.failure();
  if (known && !done_) {
    failure_ = *known;
    log_line(failure_->message);
    stop_sandbox(std::chrono::milliseconds(0));
  }
  if (known) leave_running_state(config_.state_dir, &*known);
  send_or_log(conn.fd.get(),
              known ? error_event(*known, 1) : session::exit_event(exit_code, stopped, oom_note(conn, exit_code)));
  if (conn.provisioning) network_.end_provisioning();
  network_.audit().release_log(conn.audit_log);
  conn.audit_log.clear();
  conn.session = 0;  // ended: finishing the connection must not signal a reused pid
  finish(conn);
}

nlohmann::json Server::network_event(bool ask_proxy) {
  return {{"event", "network"}, {"v", session::kProtocolVersion}, {"network", network_.describe(ask_proxy)}};
}

nlohmann::json Server::handle_forward(const nlohmann::json& body) {
  auto refused = [](const Error& e) { return error_event(e, exit_code_for(e.kind)); };
  auto host_port = session::control_fields(body).integer("host_port", 0, 65535);
  if (!host_port) return refused(host_port.error());
  if (flag_field(body, "remove")) {
    Status removed = network_.remove_forward(static_cast<uint16_t>(*host_port));
    if (!removed.ok()) return refused(removed.error());
  } else {
    auto guest_port = session::control_fields(body).integer("guest_port", 1, 65535);
    if (!guest_port) return refused(guest_port.error());
    auto added = network_.add_forward({static_cast<uint16_t>(*host_port), static_cast<uint16_t>(*guest_port)});
    if (!added) return refused(added.error());
  }
  return network_event();
}

// {"op":"policy"}: the policy in force; with "rules" and "change", those rules replace the running ones;
// with "pending", the refusals waiting for the host user's approval.
nlohmann::json Server::handle_policy(const nlohmann::json& body) {
  auto answer = [](const nlohmann::json& policy) {
    return nlohmann::json{{"event", "policy"}, {"v", session::kProtocolVersion}, {"policy", policy}};
  };
  if (flag_field(body, "pending")) {
    return {{"event", "pending"}, {"v", session::kProtocolVersion}, {"pending", network_.describe_pending()}};
  }
  if (!body.contains("rules")) return answer(network_.describe_policy());
  auto refused = [](const Error& e) { return error_event(e, exit_code_for(e.kind)); };
  auto rules = net::rules_from_json(body["rules"]);
  if (!rules) return refused(rules.error());
  nlohmann::json change = body.value("change", nlohmann::json::object());
  if (!change.is_object()) return refused(failed("control message: field 'change' must be an object"));
  JsonFields fields = session::control_fields(change);
  Network::PolicyChange what{text_field(change, "action"), text_field(change, "rule"), text_field(change, "who"),
                             std::nullopt};
  if (auto until = fields.optional_integer("until_ms", 0, 0); until && *until > 0) what.until_ms = *until;
  auto changed = network_.change_policy(std::move(*rules), what);
  if (!changed) return refused(changed.error());
  return answer(*changed);
}

// Until the next rule's expiry (poll's -1: none), so that it ends on time.
int Server::expiry_timeout_ms() const {
  auto next = network_.next_expiry();
  if (!next) return -1;
  return static_cast<int>(std::clamp<int64_t>(*next - net::unix_ms_now(), 0, 60'000));
}

void Server::stop_sandbox(std::chrono::milliseconds grace) {
  done_ = true;
  for (const auto& conn : connections_) {
    if (conn->pausing) (void)engine_.pause(false);  // a held sandbox would not see its stop's SIGTERM
    conn->pausing = false;
  }
  Status stopped = engine_.stop(grace);
  if (!stopped.ok()) log_line("stopping the sandbox: " + stopped.error().message);
  network_.stop();
  // Every process of the sandbox has ended: reap them and tell each session how, and that the stop
  // ended it.
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) break;
    session_ended(pid, exit_code_from_wait_status(status), true);
  }
  // The engine's own sessions, and those its stop() reaped, ended with the sandbox.
  for (const EndedSession& ended : engine_.ended_sessions()) session_ended(ended.key, ended.exit_code, true);
}

}  // namespace tnk::supervisor
