#include "guest/bridge.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "agent/bridge.h"
#include "core/unique_fd.h"

namespace tnk::guest {
namespace {

constexpr int kMaxConnections = 256;  // more are closed at once
constexpr timeval kHandshakeTimeout{10, 0};

void bridge_log(const std::string& text) { std::fprintf(stderr, "tnk-agent: bridge: %s\n", text.c_str()); }

bool send_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// The request line, byte by byte: nothing after its '\n' is consumed. Empty on EOF, timeout or overflow.
std::string read_line(int fd) {
  std::string line;
  char c = 0;
  while (line.size() < agent::kBridgeMaxLine) {
    ssize_t n = ::recv(fd, &c, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return {};
    if (c == '\n') return line;
    line += c;
  }
  return {};
}

// One direction until its end of stream, passed on with shutdown(SHUT_WR); an error ends both.
void pump(int from, int to) {
  char buffer[65536];
  for (;;) {
    ssize_t n = ::recv(from, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      ::shutdown(to, SHUT_WR);
      return;
    }
    if (n < 0 || !send_all(to, buffer, static_cast<size_t>(n))) {
      ::shutdown(from, SHUT_RDWR);
      ::shutdown(to, SHUT_RDWR);
      return;
    }
  }
}

bool allowed(uint32_t ip, uint32_t relay_host) { return (ip >> 24) == 127 || ip == relay_host; }

// Connects to what `request` names; the reply line says how that went (the socket is valid on "ok").
std::string connect_target(const std::string& request, uint32_t relay_host, UniqueFd* upstream) {
  auto target = agent::parse_bridge_request(request);
  if (!target) return agent::bridge_reply(EINVAL, target.error().message);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(target->port);
  ::inet_pton(AF_INET, target->ip.c_str(), &addr.sin_addr);  // checked by parse_bridge_request
  if (!allowed(ntohl(addr.sin_addr.s_addr), relay_host)) {
    return agent::bridge_reply(
        EACCES, "the bridge connects only to the guest's loopback and the host's relays, not to " + target->ip);
  }
  int err = 0;
  upstream->reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!upstream->valid()) {
    err = errno;
  } else {
    ::setsockopt(upstream->get(), SOL_SOCKET, SO_SNDTIMEO, &kHandshakeTimeout, sizeof kHandshakeTimeout);
    if (::connect(upstream->get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      err = errno == EINPROGRESS ? ETIMEDOUT : errno;  // SO_SNDTIMEO ran out
      upstream->reset();
    }
  }
  std::string what = "connecting to " + target->ip + ":" + std::to_string(target->port) + " inside the vm";
  return agent::bridge_reply(err, what);
}

// Reads the request, connects, answers, then relays until both directions have ended.
void serve_one(UniqueFd client, uint32_t relay_host) {
  ::setsockopt(client.get(), SOL_SOCKET, SO_RCVTIMEO, &kHandshakeTimeout, sizeof kHandshakeTimeout);
  UniqueFd upstream;
  std::string reply = connect_target(read_line(client.get()), relay_host, &upstream);
  timeval none{0, 0};
  ::setsockopt(client.get(), SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
  if (!send_all(client.get(), reply.data(), reply.size()) || !upstream.valid()) return;
  int a = client.get(), b = upstream.get();
  std::thread up([a, b] { pump(a, b); });
  pump(b, a);
  up.join();
}

[[noreturn]] void serve(uint32_t address, uint32_t relay_host) {
  ::prctl(PR_SET_NAME, "tnk-bridge");
  ::signal(SIGPIPE, SIG_IGN);
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int one = 1;
  ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(agent::kBridgePort);
  addr.sin_addr.s_addr = htonl(address);
  if (!listener.valid() || ::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener.get(), SOMAXCONN) != 0) {
    bridge_log(std::string("cannot listen on port ") + std::to_string(agent::kBridgePort) + ": " +
               std::strerror(errno));
    ::_exit(1);
  }
  std::atomic<int> connections{0};  // lives as long as the process: serve() never returns
  for (;;) {
    UniqueFd client(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client.valid()) {
      if (errno != EINTR && errno != ECONNABORTED) ::usleep(10000);  // EMFILE and the like: do not spin
      continue;
    }
    if (connections.load() >= kMaxConnections) continue;  // closed at once
    ++connections;
    int fd = client.release();
    try {
      std::thread([fd, relay_host, &connections] {
        serve_one(UniqueFd(fd), relay_host);
        --connections;
      }).detach();
    } catch (const std::exception&) {
      ::close(fd);
      --connections;
    }
  }
}

// The SSH agent's bridge: each connection to the unix socket, relayed to the supervisor's agent.
[[noreturn]] void serve_ssh_agent(uint32_t relay_host) {
  ::prctl(PR_SET_NAME, "tnk-ssh-bridge");
  ::signal(SIGPIPE, SIG_IGN);
  const std::string path = agent::kSshAgentSocket;
  sockaddr_un local{};
  local.sun_family = AF_UNIX;
  std::memcpy(local.sun_path, path.c_str(), path.size() + 1);
  ::mkdir(path.substr(0, path.rfind('/')).c_str(), 0755);
  ::unlink(path.c_str());
  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener.valid() || ::bind(listener.get(), reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
      ::chmod(path.c_str(), 0666) != 0 || ::listen(listener.get(), SOMAXCONN) != 0) {
    bridge_log("cannot listen on " + path + ": " + std::strerror(errno));
    ::_exit(1);
  }
  sockaddr_in relay{};
  relay.sin_family = AF_INET;
  relay.sin_port = htons(agent::kSshAgentPort);
  relay.sin_addr.s_addr = htonl(relay_host);
  std::atomic<int> connections{0};  // lives as long as the process: this never returns
  for (;;) {
    UniqueFd client(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client.valid()) {
      if (errno != EINTR && errno != ECONNABORTED) ::usleep(10000);
      continue;
    }
    if (connections.load() >= kMaxConnections) continue;
    ++connections;
    int fd = client.release();
    try {
      std::thread([fd, relay, &connections] {
        UniqueFd from(fd), to(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (to.valid() && ::connect(to.get(), reinterpret_cast<const sockaddr*>(&relay), sizeof relay) == 0) {
          int a = from.get(), b = to.get();
          std::thread up([a, b] { pump(a, b); });
          pump(b, a);
          up.join();
        }
        --connections;
      }).detach();
    } catch (const std::exception&) {
      ::close(fd);
      --connections;
    }
  }
}

}  // namespace

pid_t start_ssh_agent_bridge(uint32_t relay_host) {
  pid_t pid = ::fork();
  if (pid == 0) serve_ssh_agent(relay_host);
  return pid;
}

pid_t start_bridge(uint32_t address, uint32_t relay_host) {
  pid_t pid = ::fork();
  if (pid == 0) serve(address, relay_host);
  return pid;
}

}  // namespace tnk::guest
