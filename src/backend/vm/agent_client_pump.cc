#include "backend/vm/agent_client_pump.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "core/terminal_text.h"

namespace tnk::vm {
namespace {

constexpr std::size_t kMaxQueuedToAgent = 1 << 20;  // past this, stdin is not read until it drains
// Past the bound only what the agent's own frames call for is queued (acks of its output, mostly): an
// agent that goes on sending but stops reading would grow the queue in the supervisor for ever
// (security review L2). A live agent drains it; past this cap the connection is over.
constexpr std::size_t kQueueCapToAgent = 4 * kMaxQueuedToAgent;

}  // namespace

AgentClient::Pump::Pump(UniqueFd sock, UniqueFd wake)
    : sock_(std::move(sock)), wake_(std::move(wake)), out_(kMaxQueuedToAgent) {}

AgentClient::Pump::~Pump() = default;

void AgentClient::Pump::wake() {
  uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
}

void AgentClient::Pump::send(agent::FrameType type, uint32_t session, std::string_view payload) {
  if (failure) return;                      // nothing reaches the agent any more
  (void)out_.push(type, session, payload);  // callers keep payloads within kMaxPayload
  if (out_.queued() > kQueueCapToAgent) {
    fail(failed("the agent stopped reading what tnk sends it (" + std::to_string(out_.queued()) + " bytes queued)"));
  }
  wake();
}

SessionId AgentClient::Pump::new_id() {
  while (next_id_ == 0 || sessions.count(next_id_) || files.count(next_id_)) ++next_id_;
  return next_id_++;
}

void AgentClient::Pump::stop() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping_ = true;
    wake();
  }
  if (thread.joinable()) thread.join();
  sock_.reset();  // the agent kills whatever still runs
  Finished lost;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& [id, s] : sessions) lost.emplace_back(id, std::move(s));
    sessions.clear();
  }
  for (auto& [id, s] : lost) {
    SessionExit exit = s.exit.value_or(SessionExit{kExitLost, 0, "the agent client was closed"});
    s.in.reset();
    s.out.reset();
    s.err.reset();
    if (s.on_exit) s.on_exit(id, exit);
  }
}

// The connection is over: every session ends as lost (after its pending output is written).
void AgentClient::Pump::fail(const Error& error) {
  if (failure) return;
  failure = error;
  for (auto& [id, s] : sessions) {
    if (!s.exit) s.exit = SessionExit{kExitLost, 0, "connection to the agent lost: " + error.message};
  }
  cv.notify_all();
}

void AgentClient::Pump::run() {
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<SessionId, int>> owners;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stopping_) return;
      build_poll(fds, owners);
    }
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      std::lock_guard<std::mutex> lock(mu);
      fail(sys_error(errno, "agent client poll"));
      continue;
    }
    Finished finished;
    {
      std::lock_guard<std::mutex> lock(mu);
      uint64_t count;
      if (fds[0].revents) (void)!::read(wake_.get(), &count, sizeof count);
      if (!failure && fds[1].revents) read_socket();
      for (std::size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents) session_io(owners[i - 2].first, owners[i - 2].second, fds[i].revents);
      }
      if (!failure && !out_.flush(sock_.get())) fail(sys_error(errno, "writing to the agent"));
      finished = collect_finished();
    }
    for (auto& [id, s] : finished) {
      if (s.on_exit) s.on_exit(id, *s.exit);
    }
  }
}

void AgentClient::Pump::build_poll(std::vector<pollfd>& fds, std::vector<std::pair<SessionId, int>>& owners) {
  fds.push_back({wake_.get(), POLLIN, 0});
  short sock_events = failure ? 0 : static_cast<short>(POLLIN | (out_.queued() > 0 ? POLLOUT : 0));
  fds.push_back({failure ? -1 : sock_.get(), sock_events, 0});
  bool room = !failure && out_.has_room();
  for (auto& [id, s] : sessions) {
    if (s.input_open && !s.exit && room && s.stdin_unacked < agent::kStreamWindow && s.in.valid()) {
      fds.push_back({s.in.get(), POLLIN, 0});
      owners.emplace_back(id, 0);
    }
    if (!s.out_pending.empty()) {
      fds.push_back({s.out.get(), POLLOUT, 0});
      owners.emplace_back(id, 1);
    }
    if (!s.err_pending.empty()) {
      fds.push_back({s.err.get(), POLLOUT, 0});
      owners.emplace_back(id, 2);
    }
  }
}

void AgentClient::Pump::read_socket() {
  char buf[agent::kMaxPayload];
  ssize_t n = ::recv(sock_.get(), buf, sizeof buf, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    fail(n == 0 ? failed("the agent closed the connection") : sys_error(errno, "reading from the agent"));
    return;
  }
  std::vector<agent::Frame> frames;
  Status fed = decoder_.feed(std::string_view(buf, static_cast<std::size_t>(n)), frames);
  for (const auto& frame : frames) {
    if (!failure) handle(frame);
  }
  if (!fed.ok()) fail(fed.error());
}

void AgentClient::Pump::handle(const agent::Frame& f) {
  auto it = sessions.find(f.session);
  Session* s = (f.session != 0 && it != sessions.end()) ? &it->second : nullptr;
  switch (f.kind()) {
    case agent::FrameType::kHelloOk: {
      auto ok = agent::parse_hello_ok(f.payload);
      if (ok)
        hello = *ok;
      else
        fail(ok.error());
      break;
    }
    case agent::FrameType::kPong:
      if (auto p = pings.find(f.payload); p != pings.end()) p->second = true;
      break;
    case agent::FrameType::kPoweroffOk: poweroff_ok = true; break;
    case agent::FrameType::kError: handle_error(f); break;
    case agent::FrameType::kFileResult:
      if (auto w = files.find(f.session); w != files.end()) w->second = ok_status();
      break;
    case agent::FrameType::kStdout:
    case agent::FrameType::kStderr:
      if (s) session_output(*s, f.session, f.payload, f.kind() == agent::FrameType::kStderr);
      break;
    case agent::FrameType::kInputAck:
      if (auto bytes = agent::parse_ack(f.payload); bytes && s)
        s->stdin_unacked -= std::min<std::size_t>(*bytes, s->stdin_unacked);
      break;
    case agent::FrameType::kExit:
      if (auto exit = agent::parse_exit(f.payload); exit && s)
        s->exit = SessionExit{exit->code, exit->signal, exit->error};
      else if (!exit)
        fail(exit.error());
      break;
    default: break;  // started, and anything newer agents may send
  }
  cv.notify_all();
}

void AgentClient::Pump::handle_error(const agent::Frame& f) {
  auto error = agent::parse_error(f.payload);
  if (!error) return fail(error.error());
  if (error->fatal) return fail(failed(error->message));
  if (auto w = files.find(f.session); w != files.end()) {
    w->second = failed(error->message);
  } else if (auto s = sessions.find(f.session); s != sessions.end() && !s->second.exit) {
    s->second.exit = SessionExit{126, 0, error->message};
  }
}

// Output goes out in arrival order; the agent's credit bounds what waits here. A stream whose fd is
// gone (or was never given) is acknowledged at once, so the program is never stalled by it.
void AgentClient::Pump::session_output(Session& s, uint32_t id, std::string_view bytes, bool is_stderr) {
  std::string& pending = is_stderr ? s.err_pending : s.out_pending;
  const UniqueFd& fd = is_stderr ? s.err : s.out;
  if (!fd.valid()) {
    if (!bytes.empty()) send(agent::FrameType::kOutputAck, id, agent::encode_ack(static_cast<uint32_t>(bytes.size())));
    return;
  }
  if (pending.size() + bytes.size() > 2 * agent::kStreamWindow)
    return fail(failed("the agent overran the output window"));
  pending.append(bytes);
}

void AgentClient::Pump::session_io(SessionId id, int which, short revents) {
  auto it = sessions.find(id);
  if (it == sessions.end()) return;
  if (which == 0 && (revents & (POLLIN | POLLHUP | POLLERR))) read_input(id, it->second);
  if (which > 0) write_output(id, it->second, which);
}

void AgentClient::Pump::read_input(SessionId id, Session& s) {
  char buf[agent::kMaxPayload];
  std::size_t room = std::min(sizeof buf, agent::kStreamWindow - s.stdin_unacked);
  ssize_t n = ::read(s.in.get(), buf, room);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {  // EOF, or EIO from a terminal whose other side closed
    s.input_open = false;
    if (!s.tty) {
      s.in.reset();
      send(agent::FrameType::kStdinEof, id);
    }
    return;
  }
  s.stdin_unacked += static_cast<std::size_t>(n);
  send(agent::FrameType::kStdin, id, std::string_view(buf, static_cast<std::size_t>(n)));
}

void AgentClient::Pump::write_output(SessionId id, Session& s, int which) {
  std::string& pending = which == 1 ? s.out_pending : s.err_pending;
  UniqueFd& fd = which == 1 ? s.out : s.err;
  ssize_t n = ::write(fd.get(), pending.data(), pending.size());
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  std::size_t done = n < 0 ? pending.size() : static_cast<std::size_t>(n);
  if (n < 0) fd.reset();  // the reader is gone: drop this stream from now on
  pending.erase(0, done);
  if (done > 0) send(agent::FrameType::kOutputAck, id, agent::encode_ack(static_cast<uint32_t>(done)));
}

// A session that did not start or was lost says why on its own stderr (the terminal, for a tty
// session), like a program the shell cannot run. One short line: a non-blocking write takes it whole.
void AgentClient::Pump::tell_why(const Session& s) {
  if (!s.exit || s.exit->error.empty()) return;
  const UniqueFd& fd = s.err.valid() ? s.err : s.out;
  std::string line = "tnk: " + terminal_safe(s.exit->error) + (s.tty ? "\r\n" : "\n");  // the guest's words
  if (fd.valid()) (void)!::write(fd.get(), line.data(), line.size());
}

AgentClient::Pump::Finished AgentClient::Pump::collect_finished() {
  Finished done;
  for (auto it = sessions.begin(); it != sessions.end();) {
    Session& s = it->second;
    if (!s.exit || !s.out_pending.empty() || !s.err_pending.empty()) {
      ++it;
      continue;
    }
    tell_why(s);
    s.in.reset();
    s.out.reset();
    s.err.reset();
    done.emplace_back(it->first, std::move(s));
    it = sessions.erase(it);
  }
  return done;
}

}  // namespace tnk::vm
