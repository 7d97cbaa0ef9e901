// The supervisor's network relays, each in its own child process so that the supervisor itself
// stays single-threaded (it forks into namespaces): the inference forwarder, the egress proxies and
// the port forwards. Each reports its decisions as one JSON line per connection on `events_fd`
// (the supervisor turns them into audit records), and ends its connections cleanly on SIGTERM, so
// that connections cut by a stop are reported too.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "core/result.h"
#include "core/unique_fd.h"
#include "net/forwarder.h"
#include "net/inference_forwarder.h"
#include "net/proxy.h"
#include "supervisor/route_gateway.h"
#include "supervisor/ssh_agent_relay.h"

namespace tnk::supervisor {

// Inside the sandbox (127.0.0.1): the proxy of the allowlist and open policies, and the one that
// exists only while provisioning runs (its own port, its own allow-list).
inline constexpr uint16_t kProxyPort = 3128;
inline constexpr uint16_t kProvisionProxyPort = 3129;

// What a relay says its decisions were made under: "inference", "allowlist", "open", "provision",
// "port forward". Goes into each event line as "policy".
struct RelayEvents {
  int fd = -1;  // the write end of the supervisor's event pipe
  std::string policy;
};

// The inference gateway: passes the inference API requests accepted on `listener` (inside the
// sandbox) to `target` (the endpoint on the host) as `settings` say, refuses every other request.
Result<pid_t> start_inference_forwarder(UniqueFd listener, const net::ForwardTarget& target, const RelayEvents& events,
                                        const net::InferenceLimits& limits, const net::GatewaySettings& settings);

// The route gateway (tnk-routes): passes /r/<name>/... accepted on `listener` (inside the sandbox) to
// each route's upstream with its credential (supervisor/route_gateway.h).
Result<pid_t> start_route_gateway(UniqueFd listener, const std::vector<net::CredentialRoute>& routes,
                                  const RelayEvents& events);

// The SSH agent of SSH routes (tnk-ssh-agent): serves `listener` (a unix socket inside the sandbox) and
// passes what the routes allow to the host's agent at `upstream` (supervisor/ssh_agent_relay.h), which
// it connects to before it drops its privileges.
Result<pid_t> start_ssh_agent(UniqueFd listener, const std::filesystem::path& upstream,
                              const std::vector<net::SshRoute>& routes, const RelayEvents& events);

// A port forward: relays raw TCP from `listener` (on the host) to `target`. `enter` runs first in the
// relay process: it moves into the sandbox's network there, its listener stays outside.
Result<pid_t> start_port_forward(UniqueFd listener, const net::ForwardTarget& target, const RelayEvents& events,
                                 const std::function<Status()>& enter);

// An HTTP(S) proxy on `listener` that lets through what `config` allows, never a host-internal address.
Result<pid_t> start_proxy(UniqueFd listener, net::ProxyConfig config, const RelayEvents& events);

// The variables that point a session at the proxy on `port` inside the sandbox, at `host` (where the
// sandbox reaches the supervisor's relays: Engine::relay_host).
// `userinfo`: "user:password@", or empty.
std::vector<std::string> proxy_env(uint16_t port, const std::string& host = "127.0.0.1",
                                   const std::string& userinfo = "");

}  // namespace tnk::supervisor
