// A tiny HTTP server for the inference tests: one thread, one listening socket on a loopback
// address and port 0, a canned raw response for every connection (or none at all).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tnk::inference::testing {

class TestHttpServer {
 public:
  enum class Mode { kRespond, kSilent };  // kSilent: accept and read, never answer

  // nullptr when the address family is not available (e.g. no IPv6 loopback).
  static std::unique_ptr<TestHttpServer> start(std::string response, Mode mode = Mode::kRespond, int family = AF_INET,
                                               size_t piece = 0) {
    auto server = std::unique_ptr<TestHttpServer>(new TestHttpServer(std::move(response), mode, piece));
    if (!server->listen_on(family)) return nullptr;
    server->thread_ = std::thread([s = server.get()] { s->run(); });
    return server;
  }

  ~TestHttpServer() {
    if (thread_.joinable()) {
      char c = 'x';
      (void)!::write(stop_[1], &c, 1);
      thread_.join();
    }
    for (int fd : held_) ::close(fd);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    ::close(stop_[0]);
    ::close(stop_[1]);
  }

  uint16_t port() const { return port_; }
  std::string base(const std::string& path = "") const {
    return (family_ == AF_INET6 ? "http://[::1]:" : "http://127.0.0.1:") + std::to_string(port_) + path;
  }
  std::string last_request() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_request_;
  }

  static std::string json_response(const std::string& body, int status = 200) {
    return "HTTP/1.1 " + std::to_string(status) +
           " X\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  }

 private:
  TestHttpServer(std::string response, Mode mode, size_t piece)
      : response_(std::move(response)), mode_(mode), piece_(piece) {
    if (::pipe2(stop_, O_CLOEXEC) != 0) stop_[0] = stop_[1] = -1;
  }

  bool listen_on(int family) {
    family_ = family;
    listen_fd_ = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) return false;
    sockaddr_storage ss{};
    socklen_t len = 0;
    if (family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
      a->sin6_family = AF_INET6;
      a->sin6_addr = in6addr_loopback;
      len = sizeof *a;
    } else {
      auto* a = reinterpret_cast<sockaddr_in*>(&ss);
      a->sin_family = AF_INET;
      a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      len = sizeof *a;
    }
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(listen_fd_, 8) != 0) return false;
    if (::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return false;
    port_ = ntohs(family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                     : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    return true;
  }

  // Waits for `fd` to be readable; false when asked to stop.
  bool wait_readable(int fd) {
    pollfd p[2] = {{fd, POLLIN, 0}, {stop_[0], POLLIN, 0}};
    while (::poll(p, 2, -1) < 0) {
    }
    return (p[1].revents & POLLIN) == 0;
  }

  void run() {
    while (wait_readable(listen_fd_)) {
      int conn = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) continue;
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos && wait_readable(conn)) {
        ssize_t n = ::read(conn, buf, sizeof buf);
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        last_request_ = request;
      }
      if (mode_ == Mode::kSilent) {
        held_.push_back(conn);
        continue;
      }
      size_t step = piece_ == 0 ? response_.size() : piece_;
      for (size_t off = 0; off < response_.size(); off += step) {
        if (::send(conn, response_.data() + off, std::min(step, response_.size() - off), MSG_NOSIGNAL) < 0) break;
        if (piece_ != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      ::close(conn);
    }
  }

  std::string response_;
  Mode mode_;
  size_t piece_;
  int family_ = AF_INET;
  int listen_fd_ = -1;
  int stop_[2] = {-1, -1};
  uint16_t port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  std::string last_request_;
  std::vector<int> held_;
};

// A port on 127.0.0.1 that nothing listens on (bound, then closed).
inline uint16_t closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), len);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace tnk::inference::testing
