#include "guest/server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <vector>

#include "agent/frame_queue.h"

namespace tnk::guest {

// One host connection: its bytes in (decoder) and out (a queue written as the fd allows).
class AgentServer::Connection {
 public:
  explicit Connection(int fd) : fd_(fd) {}
  int fd() const { return fd_; }
  agent::FrameQueue& out() { return out_; }
  agent::FrameDecoder& decoder() { return decoder_; }
  bool greeted = false;

  void send(agent::FrameType type, uint32_t session, std::string_view payload = {}) {
    (void)out_.push(type, session, payload);  // payloads built here are always small
  }
  void send_error(uint32_t session, const std::string& message, bool fatal) {
    send(agent::FrameType::kError, session, agent::encode_error({message, fatal}));
  }
  // Writes what the fd takes now; false when the connection is broken.
  bool flush() { return out_.flush(fd_); }
  // Before the connection ends: a bounded wait so the last frames (error, poweroff-ok) get out.
  void flush_for(std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (out_.queued() > 0 && flush() && std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, 50);
    }
  }

 private:
  int fd_;
  agent::FrameQueue out_{kMaxQueuedToHost};
  agent::FrameDecoder decoder_;
};

namespace {

// Compares without an early exit, so the time taken says nothing about where a wrong token differs.
bool same_token(const std::string& given, const std::string& expected) {
  if (expected.empty() || given.size() != expected.size()) return false;
  unsigned diff = 0;
  for (std::size_t i = 0; i < given.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ expected[i]);
  return diff == 0;
}

}  // namespace

Result<std::unique_ptr<AgentServer>> AgentServer::create(ServerOptions options) {
  if (options.token.empty()) return failed("the agent needs a token", "pass tnk.token= (or --token)");
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  if (::sigprocmask(SIG_BLOCK, &chld, nullptr) != 0) return sys_error(errno, "cannot block SIGCHLD");
  UniqueFd fd(::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd.valid()) return sys_error(errno, "cannot create a signalfd for SIGCHLD");
  ::signal(SIGPIPE, SIG_IGN);
  return std::unique_ptr<AgentServer>(new AgentServer(std::move(options), std::move(fd)));
}

AgentServer::~AgentServer() { end_connection(); }

void AgentServer::reap() {
  signalfd_siginfo info;
  while (::read(child_fd_.get(), &info, sizeof info) > 0) {
  }
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    for (auto& [id, session] : sessions_) {
      if (session->pid() == pid) session->set_exited(status);
    }
  }
}

void AgentServer::end_connection() {
  for (auto& [id, session] : sessions_) session->kill();
  for (auto& [id, session] : sessions_) {
    if (session->exited()) continue;
    int status;
    while (::waitpid(session->pid(), &status, 0) < 0 && errno == EINTR) {
    }
  }
  sessions_.clear();
  files_.clear();
}

Result<ConnectionEnd> AgentServer::serve(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) return sys_error(errno, "agent connection");
  Connection c(fd);
  std::vector<agent::Frame> frames;
  std::string buf(agent::kMaxPayload, '\0');
  ConnectionEnd end = ConnectionEnd::kClosed;
  for (bool done = false; !done;) {
    bool room = c.out().has_room();
    std::vector<pollfd> fds = {{child_fd_.get(), POLLIN, 0},
                               {fd, static_cast<short>((room ? POLLIN : 0) | (c.out().queued() ? POLLOUT : 0)), 0}};
    std::vector<GuestSession*> owners;
    for (auto& [id, session] : sessions_) {
      std::size_t before = fds.size();
      session->add_poll(fds, room);
      owners.insert(owners.end(), fds.size() - before, session.get());
    }
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      Error error = sys_error(errno, "agent poll");
      end_connection();
      return error;
    }
    if (fds[0].revents) reap();
    for (std::size_t i = 2; i < fds.size(); ++i) owners[i - 2]->handle(fds[i], c.out());
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) break;  // the host went away
      frames.clear();
      Status fed =
          n > 0 ? c.decoder().feed(std::string_view(buf.data(), static_cast<std::size_t>(n)), frames) : ok_status();
      for (auto& frame : frames) {
        Next next = dispatch(c, frame);
        if (next == Next::kContinue) continue;
        end = next == Next::kPoweroff ? ConnectionEnd::kPoweroff : ConnectionEnd::kRefused;
        done = true;
        break;
      }
      if (!done && !fed.ok()) {
        c.send_error(0, fed.error().message, true);
        end = ConnectionEnd::kRefused;
        done = true;
      }
    }
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      it = it->second->finish(c.out()) ? sessions_.erase(it) : std::next(it);
    }
    if (!c.flush()) break;
  }
  c.flush_for(std::chrono::seconds(2));
  end_connection();
  return end;
}

Status AgentServer::serve_listener(int listen_fd) {
  for (;;) {
    int conn = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0 && errno == EINTR) continue;
    if (conn < 0) return sys_error(errno, "accepting an agent connection");
    UniqueFd owned(conn);
    reap();
    TNK_ASSIGN_OR_RETURN(ConnectionEnd end, serve(conn));
    if (end == ConnectionEnd::kPoweroff) return ok_status();
  }
}

AgentServer::Next AgentServer::dispatch(Connection& c, agent::Frame& frame) {
  if (!c.greeted) return greet(c, frame);
  switch (frame.kind()) {
    case agent::FrameType::kHello:
      // A virtio-serial port cannot always show the agent that the host side reconnected (a quick
      // reconnect hides the hang-up): a new hello starts a new connection, without the old sessions.
      end_connection();
      c.greeted = false;
      return greet(c, frame);
    case agent::FrameType::kPing: c.send(agent::FrameType::kPong, frame.session, frame.payload); return Next::kContinue;
    case agent::FrameType::kPoweroff: c.send(agent::FrameType::kPoweroffOk, frame.session); return Next::kPoweroff;
    case agent::FrameType::kClock: set_clock(c, frame.payload); return Next::kContinue;
    case agent::FrameType::kExec: return exec(c, frame);
    case agent::FrameType::kStdin:
    case agent::FrameType::kStdinEof:
    case agent::FrameType::kResize:
    case agent::FrameType::kSignal:
    case agent::FrameType::kOutputAck: return to_session(c, frame);
    case agent::FrameType::kFilePut:
    case agent::FrameType::kFileData:
    case agent::FrameType::kFileDone: return file(c, frame);
    default:
      c.send_error(0, "agent: unexpected message " + agent::frame_type_name(frame.type) + " (ignored)", false);
      return Next::kContinue;
  }
}

void AgentServer::set_clock(Connection& c, const std::string& payload) {
  auto ns = agent::parse_clock(payload);
  if (!ns) {
    c.send_error(0, "agent: " + ns.error().message, false);
    return;
  }
  timespec to{static_cast<time_t>(*ns / 1'000'000'000), static_cast<long>(*ns % 1'000'000'000)};
  if (::clock_settime(CLOCK_REALTIME, &to) != 0) {
    c.send_error(0, std::string("agent: cannot set the clock: ") + std::strerror(errno), false);
  }
}

AgentServer::Next AgentServer::greet(Connection& c, const agent::Frame& frame) {
  if (frame.kind() != agent::FrameType::kHello) {
    c.send_error(0, "agent: the first message must be hello, not " + agent::frame_type_name(frame.type), true);
    return Next::kRefuse;
  }
  auto hello = agent::parse_hello(frame.payload);
  if (!hello) {
    c.send_error(0, hello.error().message, true);
    return Next::kRefuse;
  }
  if (hello->version != agent::kProtocolVersion) {
    c.send_error(0,
                 "agent: hello for protocol version " + std::to_string(hello->version) + ", this agent speaks " +
                     std::to_string(agent::kProtocolVersion),
                 true);
    return Next::kRefuse;
  }
  if (!same_token(hello->token, options_.token)) {
    c.send_error(0, "agent: hello refused: wrong token", true);
    return Next::kRefuse;
  }
  c.greeted = true;
  c.send(agent::FrameType::kHelloOk, 0, agent::encode_hello_ok({agent::kProtocolVersion, options_.agent_name}));
  return Next::kContinue;
}

AgentServer::Next AgentServer::exec(Connection& c, const agent::Frame& frame) {
  uint32_t id = frame.session;
  if (id == 0 || sessions_.count(id) || files_.count(id)) {
    c.send_error(id, "agent: exec on session " + std::to_string(id) + ", which is 0 or in use", false);
    return Next::kContinue;
  }
  if (sessions_.size() + files_.size() >= kMaxSessions) {
    c.send_error(id, "agent: too many sessions (" + std::to_string(kMaxSessions) + ")", false);
    return Next::kContinue;
  }
  auto request = agent::parse_exec(frame.payload);
  if (!request) {
    c.send_error(id, request.error().message, false);
    return Next::kContinue;
  }
  auto spawned = spawn_session(*request);
  if (!spawned) {
    agent::ExitInfo exit{spawn_failure_code(spawned.error()), 0, spawned.error().message};
    c.send(agent::FrameType::kExit, id, agent::encode_exit(exit));
    return Next::kContinue;
  }
  c.send(agent::FrameType::kStarted, id, agent::encode_started({spawned->pid}));
  sessions_.emplace(id, std::make_unique<GuestSession>(id, std::move(*spawned)));
  return Next::kContinue;
}

// Frames for a session that already ended are ignored: they crossed its exit frame on the way.
AgentServer::Next AgentServer::to_session(Connection& c, const agent::Frame& frame) {
  auto it = sessions_.find(frame.session);
  if (it == sessions_.end()) return Next::kContinue;
  GuestSession& s = *it->second;
  Status status = ok_status();
  switch (frame.kind()) {
    case agent::FrameType::kStdin: status = s.queue_input(frame.payload); break;
    case agent::FrameType::kStdinEof: s.input_eof(); break;
    case agent::FrameType::kResize: {
      auto size = agent::parse_resize(frame.payload);
      if (size)
        s.resize(*size);
      else
        status = size.error();
      break;
    }
    case agent::FrameType::kSignal: {
      auto sig = agent::parse_signal(frame.payload);
      if (sig)
        s.signal(*sig);
      else
        status = sig.error();
      break;
    }
    default: {
      auto bytes = agent::parse_ack(frame.payload);
      if (bytes)
        s.output_acked(*bytes);
      else
        status = bytes.error();
    }
  }
  if (status.ok()) return Next::kContinue;
  c.send_error(0, status.error().message, true);  // the host broke the protocol: nothing it says can be trusted
  return Next::kRefuse;
}

AgentServer::Next AgentServer::file(Connection& c, const agent::Frame& frame) {
  uint32_t id = frame.session;
  if (frame.kind() == agent::FrameType::kFilePut) {
    Status opened = ok_status();
    auto put = agent::parse_file_put(frame.payload);
    if (id == 0 || sessions_.count(id) || files_.count(id) || sessions_.size() + files_.size() >= kMaxSessions) {
      opened = failed("agent: file-put on session " + std::to_string(id) + ", which is 0, in use or one too many");
    } else if (!put) {
      opened = put.error();
    } else if (auto transfer = FileTransfer::open(*put)) {
      files_.emplace(id, std::move(*transfer));
    } else {
      opened = transfer.error();
    }
    if (!opened.ok()) c.send_error(id, opened.error().message, false);
    return Next::kContinue;
  }
  auto it = files_.find(id);
  if (it == files_.end()) return Next::kContinue;  // it failed already, and the host was told
  Status status = frame.kind() == agent::FrameType::kFileData ? it->second.append(frame.payload) : it->second.commit();
  if (!status.ok())
    c.send_error(id, status.error().message, false);
  else if (frame.kind() == agent::FrameType::kFileDone)
    c.send(agent::FrameType::kFileResult, id, "{}");
  if (!status.ok() || frame.kind() == agent::FrameType::kFileDone) files_.erase(it);
  return Next::kContinue;
}

}  // namespace tnk::guest
