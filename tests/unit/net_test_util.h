// Loopback helpers for the relay tests: listeners, blocking clients, an echo server, and a relay
// running on its own thread until the test stops it.
#pragma once

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"
#include "net/net_event.h"

namespace tnk::net::testing {

// "192.0.2.1" or "2001:db8::1" as a socket address with port 0 (a test fails on anything else).
inline sockaddr_storage address(const std::string& text) {
  sockaddr_storage ss{};
  if (text.find(':') != std::string::npos) {
    sockaddr_in6 v6{};
    v6.sin6_family = AF_INET6;
    EXPECT_EQ(::inet_pton(AF_INET6, text.c_str(), &v6.sin6_addr), 1) << text;
    std::memcpy(&ss, &v6, sizeof v6);
  } else {
    sockaddr_in v4{};
    v4.sin_family = AF_INET;
    EXPECT_EQ(::inet_pton(AF_INET, text.c_str(), &v4.sin_addr), 1) << text;
    std::memcpy(&ss, &v4, sizeof v4);
  }
  return ss;
}

inline uint16_t port_of(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

// A listener on 127.0.0.1 and a free port, as the supervisor would hand over (from inside the netns).
inline UniqueFd listen_loopback(int backlog = 512) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd.get(), backlog) != 0) return {};
  return fd;
}

// A blocking client socket whose reads give up after `timeout_s` seconds.
inline UniqueFd connect_loopback(uint16_t port, int timeout_s = 5) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  timeval tv{timeout_s, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return {};
  return fd;
}

inline bool send_text(int fd, const std::string& text) {
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::send(fd, text.data() + off, text.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Reads until the peer ends the stream (or the read timeout / an error).
inline std::string read_until_eof(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

// Reads until `out` holds `marker` (or the stream ends).
inline std::string read_until(int fd, const std::string& marker) {
  std::string out;
  char buf[4096];
  while (out.find(marker) == std::string::npos) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

inline int count_open_fds() {
  int count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (dir != nullptr && ::readdir(dir) != nullptr) ++count;
  if (dir != nullptr) ::closedir(dir);
  return count;
}

// Echoes every connection until its client half-closes, then half-closes back.
class EchoServer {
 public:
  EchoServer() : listener_(listen_loopback()) {
    thread_ = std::thread([this] { accept_loop(); });
  }
  ~EchoServer() {
    stopping_ = true;
    ::shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& t : connections_) t.join();
  }
  uint16_t port() const { return port_of(listener_.get()); }
  int accepted() const { return accepted_; }

 private:
  void accept_loop() {
    while (!stopping_) {
      int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      ++accepted_;
      std::lock_guard<std::mutex> lock(mu_);
      connections_.emplace_back([fd] { echo(UniqueFd(fd)); });
    }
  }
  static void echo(UniqueFd fd) {
    char buf[65536];
    for (;;) {
      ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
      if (n <= 0) break;
      if (!send_text(fd.get(), std::string(buf, static_cast<size_t>(n)))) return;
    }
    ::shutdown(fd.get(), SHUT_WR);
  }

  UniqueFd listener_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::thread> connections_;
};

// Collects a relay's events (the sink may be called from the relay's thread).
struct EventLog {
  std::mutex mu;
  std::vector<NetEvent> events;
  NetEventSink sink() {
    return [this](const NetEvent& e) {
      std::lock_guard<std::mutex> lock(mu);
      events.push_back(e);
    };
  }
};

// Runs `serve(stop_fd)` on a thread until stop() (or destruction).
class Serving {
 public:
  explicit Serving(std::function<Status(int)> serve) {
    if (::pipe2(stop_, O_CLOEXEC) != 0) stop_[0] = stop_[1] = -1;
    thread_ = std::thread([this, serve = std::move(serve)] { status_ = serve(stop_[0]); });
  }
  ~Serving() {
    (void)stop();
    ::close(stop_[0]);
    ::close(stop_[1]);
  }
  Status stop() {
    if (thread_.joinable()) {
      char c = 's';
      (void)!::write(stop_[1], &c, 1);
      thread_.join();
    }
    return status_;
  }

 private:
  int stop_[2] = {-1, -1};
  Status status_;
  std::thread thread_;
};

// An endpoint that records what each connection delivered (until it has been quiet a moment), answers
// `answer`, and closes; with `hold`, it sends `answer` first and closes only once released.
class RecordingEndpoint {
 public:
  explicit RecordingEndpoint(std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
      : listener_(listen_loopback()), answer_(std::move(answer)) {
    thread_ = std::thread([this] { serve(); });
  }
  ~RecordingEndpoint() {
    release();
    stopping_ = true;
    ::shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
  }
  uint16_t port() const { return port_of(listener_.get()); }
  std::vector<std::string> seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }
  void hold() { held_ = true; }
  void release() {
    if (!released_once_.exchange(true)) released_.set_value();
  }

 private:
  void serve() {
    while (!stopping_) {
      int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      UniqueFd conn(fd);
      timeval quiet{0, 300'000};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &quiet, sizeof quiet);
      std::string got;
      char buf[4096];
      for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<size_t>(n));
      {
        std::lock_guard<std::mutex> lock(mu_);
        seen_.push_back(got);
      }
      send_text(fd, answer_);
      if (held_) released_future_.wait();
    }
  }

  UniqueFd listener_;
  std::string answer_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> held_{false};
  std::atomic<bool> released_once_{false};
  std::promise<void> released_;
  std::shared_future<void> released_future_ = released_.get_future().share();
  std::mutex mu_;
  std::vector<std::string> seen_;
  std::thread thread_;
};

}  // namespace tnk::net::testing
