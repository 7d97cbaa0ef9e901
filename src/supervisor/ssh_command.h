// The ssh command git runs inside the sandbox for SSH routes (GIT_SSH_COMMAND; docs/network.md, "SSH
// routes"): ssh reaches a host through the egress proxy with HTTP CONNECT (a ProxyCommand of bash's
// /dev/tcp: the image has no netcat), and knows each route's host key from tnk.toml (a
// KnownHostsCommand), so that no file is written inside. Pure: a function of the routes and the proxy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "net/ssh_agent_filter.h"

namespace tnk::supervisor {

// Where sessions find the SSH agent (SSH_AUTH_SOCK): /run is the sandbox's own tmpfs. A vm's guest agent
// relays it to the relays' address at kSshAgentPort (agent/bridge.h has both too).
inline constexpr const char* kSshAgentSocket = "/run/tnk/ssh-agent.sock";
inline constexpr uint16_t kSshAgentPort = 3131;

// The known_hosts line of a route: "host" on port 22, "[host]:port" on another, then its key.
std::string ssh_known_hosts_line(const net::SshRoute& route);

// GIT_SSH_COMMAND's value, which git runs with sh -c: `ssh -o ProxyCommand=... -o KnownHostsCommand=...`.
// Hosts are checked names or addresses and keys are base64 (config/routes.h), so nothing here needs
// quoting beyond the fixed script's.
std::string git_ssh_command(const std::vector<net::SshRoute>& routes, const std::string& proxy_host,
                            uint16_t proxy_port);

}  // namespace tnk::supervisor
