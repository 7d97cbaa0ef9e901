#include "net/proxy.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <thread>

#include "net/address_check.h"
#include "net/dial.h"
#include "net/local_networks.h"
#include "net/policy_channel.h"
#include "net/proxy_session.h"
#include "net/serve_loop.h"
#include "net/socket_io.h"

namespace tnk::net {
namespace {

// Over the connection limit: answer 503 without blocking the accept thread.
void refuse_overflow(int fd, ProxyShared& shared) {
  std::string line = "tnk: too many connections through this sandbox's proxy (limit " +
                     std::to_string(shared.config.limits.max_connections) + ")";
  std::string answer = proxy_answer(503, line);
  (void)::send(fd, answer.data(), answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  drain_queued_input(fd);
  ::shutdown(fd, SHUT_WR);
  NetEvent event;
  event.reason = "too many connections";
  shared.report(event);
}

// Serves the policy channel beside the accept loop, and ends with it (its destructor).
class PolicyThread {
 public:
  static Result<PolicyThread> start(int policy_fd, LiveAllowList& live) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return sys_error(errno, "setting up the proxy's policy channel");
    PolicyThread out{UniqueFd(fds[0]), UniqueFd(fds[1])};
    out.thread_ = std::thread(serve_policy_channel, policy_fd, std::ref(live), out.stop_read_.get());
    return out;
  }
  PolicyThread(PolicyThread&&) = default;
  ~PolicyThread() {
    if (!thread_.joinable()) return;
    char byte = 's';
    while (::write(stop_write_.get(), &byte, 1) < 0 && errno == EINTR) {
    }
    thread_.join();
  }

 private:
  PolicyThread(UniqueFd read_end, UniqueFd write_end)
      : stop_read_(std::move(read_end)), stop_write_(std::move(write_end)) {}
  UniqueFd stop_read_, stop_write_;
  std::thread thread_;
};

}  // namespace

Status serve_proxy(int listener_fd, const ProxyConfig& config, int stop_fd) {
  // `open` reaches any name, so also not the host's own addresses or its LAN; a name the allow-list
  // names is the user's choice, even on the LAN (security review H2: "unless listed").
  AddressCheck check = config.allow_any ? AddressCheck(host_address_reason) : AddressCheck(internal_address_reason);
  std::vector<uint16_t> any_name_ports;
  if (config.allow_any) {
    any_name_ports.assign(std::begin(kOpenPorts), std::end(kOpenPorts));
    any_name_ports.insert(any_name_ports.end(), config.open_ports.begin(), config.open_ports.end());
  }
  ProxyShared shared{config,
                     config.address_check ? config.address_check : check,
                     {config.allow, config.deny, std::move(any_name_ports)},
                     {}};
  ConnectionHandler handle = [&shared](UniqueFd client, int inner_stop) {
    serve_proxy_connection(std::move(client), shared, inner_stop);
  };
  OverflowHandler overflow = [&shared](int fd) { refuse_overflow(fd, shared); };
  std::optional<PolicyThread> policy;
  if (config.policy_fd >= 0) {
    auto started = PolicyThread::start(config.policy_fd, shared.live);
    if (!started) return started.error();
    policy.emplace(std::move(*started));
  }
  return serve_connections(listener_fd, stop_fd, config.limits.max_connections, handle, overflow,
                           "the egress proxy's listener");
}

std::string ask_proxy_health(int fd, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  std::string host(kProxyHealthHost);
  if (!send_all(fd, "GET http://" + host + "/ HTTP/1.1\r\nHost: " + host + "\r\n\r\n", deadline, -1)) {
    return "the proxy closed the connection before the request was sent";
  }
  std::string answer;
  char buffer[512];
  while (answer.size() < 4096 && wait_ready(fd, POLLIN, deadline, -1) == Ready::kYes) {
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) break;
    answer.append(buffer, static_cast<size_t>(n));
  }
  return answer.empty() ? "no answer within " + duration_text(timeout) : answer;
}

}  // namespace tnk::net
