#include "net/policy_channel.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include <nlohmann/json.hpp>

#include "net/socket_io.h"

namespace tnk::net {
namespace {

constexpr std::size_t kMaxMessage = 1 << 20;  // a long allow-list fits many times over

std::vector<std::string> entries(const nlohmann::json& message, const char* key) {
  std::vector<std::string> out;
  auto it = message.find(key);
  if (it == message.end() || !it->is_array()) return out;
  for (const auto& entry : *it) {
    if (entry.is_string()) out.push_back(entry.get<std::string>());
  }
  return out;
}

}  // namespace

Result<PolicyChannel> open_policy_channel() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    return sys_error(errno, "creating the proxy's policy channel");
  }
  return PolicyChannel{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

Result<std::size_t> send_policy(int fd, const std::vector<std::string>& allow, const std::vector<std::string>& deny,
                                std::chrono::milliseconds timeout) {
  std::string message = nlohmann::json{{"allow", allow}, {"deny", deny}}.dump();
  if (::send(fd, message.data(), message.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(message.size())) {
    return sys_error(errno, "sending the new policy to the egress proxy");
  }
  if (wait_ready(fd, POLLIN, Clock::now() + timeout, -1) != Ready::kYes) {
    return failed("the egress proxy did not confirm the new policy");
  }
  char answer[256];
  ssize_t n = ::recv(fd, answer, sizeof answer, 0);
  auto json = nlohmann::json::parse(std::string(answer, n > 0 ? static_cast<std::size_t>(n) : 0), nullptr, false);
  if (!json.is_object() || !json.contains("cut") || !json["cut"].is_number_unsigned()) {
    return failed("the egress proxy did not confirm the new policy");
  }
  return json["cut"].get<std::size_t>();
}

void serve_policy_channel(int fd, LiveAllowList& live, int stop_fd) {
  std::string buffer(kMaxMessage, '\0');
  while (wait_ready(fd, POLLIN, kNoDeadline, stop_fd) == Ready::kYes) {
    ssize_t n = ::recv(fd, buffer.data(), buffer.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the supervisor went away: the lists stay as they are
    auto message = nlohmann::json::parse(buffer.substr(0, static_cast<std::size_t>(n)), nullptr, false);
    if (!message.is_object()) continue;
    std::size_t cut = live.replace(entries(message, "allow"), entries(message, "deny"));
    std::string answer = nlohmann::json{{"cut", cut}}.dump();
    (void)::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
  }
}

}  // namespace tnk::net
