#include "backend/vm/bridge.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <string_view>

#include "net/dial.h"
#include "net/socket_io.h"
#include "supervisor/ssh_command.h"

namespace tnk::vm {

// The guest agent's SSH agent bridge (agent/bridge.h) and the supervisor's agent (supervisor/ssh_command.h)
// must name the same socket and port.
static_assert(std::string_view(agent::kSshAgentSocket) == supervisor::kSshAgentSocket);
static_assert(agent::kSshAgentPort == supervisor::kSshAgentPort);

Result<UniqueFd> bridge_connect(const std::string& bridge_host, uint16_t bridge_port, const agent::BridgeTarget& target,
                                net::Clock::time_point deadline, int stop_fd) {
  TNK_ASSIGN_OR_RETURN(std::vector<net::Endpoint> bridge,
                       net::resolve_tcp(bridge_host, bridge_port, deadline, stop_fd));
  auto connected = net::connect_any(bridge, deadline, stop_fd);
  if (!connected) return connected.error().context("reaching the guest agent's connect bridge");
  int fd = connected->first.get();
  if (!net::send_all(fd, agent::bridge_request(target), deadline, stop_fd)) {
    return failed("the guest agent's connect bridge closed the connection");
  }
  std::string line;
  for (char c = 0; line.size() < agent::kBridgeMaxLine;) {
    net::Ready ready = net::wait_ready(fd, POLLIN, deadline, stop_fd);
    if (ready == net::Ready::kStopped) return sys_error(ECANCELED, "asking the guest agent's connect bridge");
    if (ready == net::Ready::kTimeout) return sys_error(ETIMEDOUT, "asking the guest agent's connect bridge");
    ssize_t n = ready == net::Ready::kYes ? ::recv(fd, &c, 1, 0) : 0;
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return failed("the guest agent's connect bridge closed the connection without an answer");
    if (c == '\n') {
      TNK_RETURN_IF_ERROR(agent::parse_bridge_reply(line));
      return std::move(connected->first);
    }
    line += c;
  }
  return failed("the guest agent's connect bridge answered too long a line");
}

}  // namespace tnk::vm
