// Helpers shared by the session unit tests: pipes, socket pairs, a fake supervisor on a thread.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "core/unique_fd.h"
#include "session/client.h"
#include "session/protocol.h"

#include "temp_dir.h"

namespace tnk::session::testing {

struct Pipe {
  UniqueFd r, w;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) std::abort();
    r.reset(fds[0]);
    w.reset(fds[1]);
  }
};

struct SocketPair {
  UniqueFd client, server;
  SocketPair() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) std::abort();
    client.reset(fds[0]);
    server.reset(fds[1]);
  }
};

inline void write_str(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

// Reads until EOF, or until nothing arrived for `quiet` (then returns what it has).
inline std::string read_all(int fd, std::chrono::milliseconds quiet = std::chrono::milliseconds(5000)) {
  std::string out;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(quiet.count())) <= 0) return out;
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

// True when the pipe whose read end is `fd` has no writer left (reads EOF without blocking).
inline bool writers_gone(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 1000) <= 0) return false;
  char c;
  return ::read(fd, &c, 1) == 0;
}

// Receives one message, failing the test on error or EOF.
inline Message must_recv(int sock) {
  auto m = recv_message_until(sock, std::chrono::steady_clock::now() + std::chrono::seconds(5));
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  if (!m.ok() || !*m) {
    ADD_FAILURE() << "no message";
    return Message{nlohmann::json::object(), {}};
  }
  return std::move(**m);
}

// True when the peer closes (or shuts down) within `wait`, ignoring any messages before that.
inline bool peer_closes(int sock, std::chrono::milliseconds wait = std::chrono::milliseconds(5000)) {
  auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    auto m = recv_message_until(sock, deadline);
    if (!m.ok()) return false;
    if (!*m) return true;
  }
}

// Plays the supervisor on its own thread; joined on destruction.
class FakeServer {
 public:
  explicit FakeServer(UniqueFd sock, std::function<void(int)> play)
      : sock_(std::move(sock)), thread_([this, play] { play(sock_.get()); }) {}
  ~FakeServer() { join(); }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  void close() { sock_.reset(); }

 private:
  UniqueFd sock_;
  std::thread thread_;
};

using testing_support::TempDir;

// The client's stdio on these descriptors, everything else as by default.
inline ClientOptions client_options(int in_fd, int out_fd, int err_fd) {
  ClientOptions options;
  options.in_fd = in_fd;
  options.out_fd = out_fd;
  options.err_fd = err_fd;
  return options;
}

}  // namespace tnk::session::testing
