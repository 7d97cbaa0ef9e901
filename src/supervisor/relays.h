// The supervisor's network relays, each in its own child process so that the supervisor itself
// stays single-threaded (it forks into namespaces): the inference forwarder, and the egress proxy
// that provisioning uses to reach the package registries.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <sys/types.h>

#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::supervisor {

// The port of the provisioning proxy inside the sandbox (127.0.0.1).
inline constexpr uint16_t kProvisionProxyPort = 3128;

// Relays connections accepted on `listener` (inside the sandbox) to host:port on the host.
Result<pid_t> start_forwarder(UniqueFd listener, const std::string& host, uint16_t port);

// An HTTP(S) proxy on `listener` that lets through only `allow` (domains, *.suffix) and never a
// host-internal address. Its decisions go to the supervisor's log.
Result<pid_t> start_proxy(UniqueFd listener, const std::vector<std::string>& allow);

// The variables that point a provisioning session at the proxy.
std::vector<std::string> proxy_env();

}  // namespace tnk::supervisor
