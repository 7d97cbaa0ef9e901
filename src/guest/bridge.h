// tnk-agent's connect bridge (agent/bridge.h): a child of PID 1 that listens on the guest's NIC address
// at agent::kBridgePort and, for each connection, connects inside the guest to the address its request
// line names (the guest's loopback, or the host relays' address) and relays bytes both ways. It is how
// the host's port forwards reach a server that listens on the guest's 127.0.0.1.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace tnk::guest {

// Forks the bridge, listening on `address` (host byte order); `relay_host` (host byte order) is the one
// address besides 127.0.0.0/8 it connects to. Returns the child's pid, or -1 when it could not fork.
pid_t start_bridge(uint32_t address, uint32_t relay_host);

}  // namespace tnk::guest
