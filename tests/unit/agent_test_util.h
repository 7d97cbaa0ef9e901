// Helpers for the agent tests: the real agent serve loop (src/agent/guest_server) in a forked child,
// on a socketpair or a listening unix socket, and a raw-frame peer for the protocol tests.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "agent/frame.h"
#include "agent/messages.h"
#include "core/unique_fd.h"
#include "guest/server.h"

namespace tnk::agent::testing {

inline constexpr const char* kToken = "test-token-0123456789";

// The agent serving in a child process (it blocks SIGCHLD and reaps there, as tnk-agent does).
class ForkedAgent {
 public:
  // Serves one connection over a socketpair; host_end() is the other end.
  ForkedAgent() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
    host_.reset(sv[0]);
    UniqueFd agent_end(sv[1]);
    pid_ = ::fork();
    if (pid_ < 0) std::abort();
    if (pid_ == 0) {
      host_.reset();
      auto server = guest::AgentServer::create({kToken, "tnk-agent test"});
      if (!server) ::_exit(3);
      auto end = (*server)->serve(agent_end.get());
      ::_exit(end ? 0 : 1);
    }
  }
  // Serves connections on a unix socket at `path`, one after another.
  explicit ForkedAgent(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) std::abort();
    if (::listen(listener.get(), 4) != 0) std::abort();
    pid_ = ::fork();
    if (pid_ < 0) std::abort();
    if (pid_ == 0) {
      auto server = guest::AgentServer::create({kToken, "tnk-agent test"});
      if (!server) ::_exit(3);
      ::_exit((*server)->serve_listener(listener.get()).ok() ? 0 : 1);
    }
  }
  ~ForkedAgent() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ForkedAgent(const ForkedAgent&) = delete;
  ForkedAgent& operator=(const ForkedAgent&) = delete;

  UniqueFd take_host_end() { return std::move(host_); }
  pid_t pid() const { return pid_; }
  // The agent's wait status once it ended by itself (within `limit`), or nullopt.
  std::optional<int> wait_exit(std::chrono::milliseconds limit = std::chrono::seconds(5)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        return status;
      }
      ::usleep(10000);
    }
    return std::nullopt;
  }

 private:
  UniqueFd host_;
  pid_t pid_ = 0;
};

// A raw peer: sends bytes and decodes the agent's frames, for tests of the protocol itself.
class RawPeer {
 public:
  explicit RawPeer(UniqueFd fd) : fd_(std::move(fd)) {}
  // Best effort: the agent may close the connection while a test still sends (after a fatal error).
  void send_bytes(const std::string& bytes) { (void)::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL); }
  void send(FrameType type, uint32_t session, std::string_view payload = {}) {
    send_bytes(encode_frame(type, session, payload));
  }
  void hello(const std::string& token = kToken) { send(FrameType::kHello, 0, encode_hello({kProtocolVersion, token})); }
  // The next frame, or nullopt on EOF or after `limit`.
  std::optional<Frame> next(std::chrono::milliseconds limit = std::chrono::seconds(5)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (frames_.empty()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{fd_.get(), POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[65536];
      ssize_t n = ::read(fd_.get(), buf, sizeof buf);
      if (n <= 0) {
        eof_ = true;
        return std::nullopt;
      }
      if (!decoder_.feed(std::string_view(buf, static_cast<std::size_t>(n)), frames_).ok()) return std::nullopt;
    }
    Frame f = std::move(frames_.front());
    frames_.erase(frames_.begin());
    return f;
  }
  // Skips frames until one of `type` (for session `session`) arrives.
  std::optional<Frame> next_of(FrameType type, uint32_t session = 0) {
    while (auto f = next()) {
      if (f->kind() == type && f->session == session) return f;
    }
    return std::nullopt;
  }
  // True when the agent closed the connection (EOF) within `limit`.
  bool closed(std::chrono::milliseconds limit = std::chrono::seconds(5)) {
    while (next(limit)) {
    }
    return eof_;
  }
  int fd() const { return fd_.get(); }

 private:
  UniqueFd fd_;
  bool eof_ = false;
  FrameDecoder decoder_;
  std::vector<Frame> frames_;
};

}  // namespace tnk::agent::testing
