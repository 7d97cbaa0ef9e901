// tnk-agent's connect bridge (agent/bridge.h): a child of PID 1 that listens on the guest's NIC address
// at agent::kBridgePort and, for each connection, connects inside the guest to the address its request
// line names (the guest's loopback, or the host relays' address) and relays bytes both ways. It is how
// the host's port forwards reach a server that listens on the guest's 127.0.0.1. And the SSH agent's
// bridge, the other way: a unix socket in the guest to the supervisor's SSH agent.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace tnk::guest {

// Forks the bridge, listening on `address` (host byte order); `relay_host` (host byte order) is the one
// address besides 127.0.0.0/8 it connects to. Returns the child's pid, or -1 when it could not fork.
pid_t start_bridge(uint32_t address, uint32_t relay_host);

// Forks the SSH agent's bridge: listens on the unix socket agent::kSshAgentSocket (0666, its directory
// 0755) and relays each connection to `relay_host`:agent::kSshAgentPort (host byte order). Returns the
// child's pid, or -1 when it could not fork.
pid_t start_ssh_agent_bridge(uint32_t relay_host);

}  // namespace tnk::guest
