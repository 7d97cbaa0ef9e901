// The host end of a vm's connect bridge (agent/bridge.h): how a port forward's relay and the proxy
// check open a connection inside the guest, from QEMU's network namespace (Engine::enter_network).
#pragma once

#include <cstdint>
#include <string>

#include "agent/bridge.h"
#include "core/result.h"
#include "core/unique_fd.h"
#include "net/socket_io.h"

namespace tnk::vm {

// Connects to the bridge at `bridge_host`:`bridge_port` (in the caller's network namespace) and has it
// connect to `target` inside the guest. Returns the nonblocking socket, positioned after the bridge's
// reply line (the reply is read byte by byte: what follows is the target's). The guest's refusal keeps
// its errno ("connecting to 127.0.0.1:8000 inside the vm: Connection refused"); ECANCELED when
// `stop_fd` fired, ETIMEDOUT past `deadline`.
Result<UniqueFd> bridge_connect(const std::string& bridge_host, uint16_t bridge_port, const agent::BridgeTarget& target,
                                net::Clock::time_point deadline, int stop_fd);

}  // namespace tnk::vm
