// The egress proxy: a minimal HTTP/1.1 forward proxy on a listener inside the sandbox's network
// namespace. It serves CONNECT tunnels (to a name: TLS for that name only, tls_sni.h) and plain-http
// absolute-form requests (one per connection) to hosts on the allow-list, resolves names itself,
// refuses any destination that resolves to a host-internal address (DNS rebinding included: the fixed
// internal ranges and, under `open`, whatever the kernel routes to the host itself or onto a link:
// local_networks.h), connects to the address it checked, and reports every decision.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "net/net_event.h"

namespace tnk::net {

// Returns why an address must not be reached (the kind, e.g. "loopback"), or nullopt to allow it.
using AddressCheck = std::function<std::optional<std::string>(const sockaddr_storage&)>;

struct ProxyLimits {
  std::size_t max_connections = 256;                  // more get 503
  std::chrono::milliseconds head_timeout{10'000};     // to receive the request head (else 408), and a
                                                      // tunnel's TLS ClientHello (else it is refused)
  std::chrono::milliseconds connect_timeout{10'000};  // resolve + connect, else 504
  std::chrono::milliseconds idle_timeout{120'000};    // a tunnel without traffic is closed
};

// A request for this name is answered by the proxy itself ("200 tnk proxy: ok") and is no decision:
// `tnk doctor` asks it to learn that the proxy answers. `.invalid` names never resolve (RFC 6761).
inline constexpr std::string_view kProxyHealthHost = "tnk-proxy.invalid";

// The ports `open` lets through without network.open_ports: HTTP and HTTPS.
inline constexpr uint16_t kOpenPorts[] = {80, 443};

struct ProxyConfig {
  std::vector<std::string> allow;  // entries as domain_match.h describes
  std::vector<std::string> deny;   // entries the allow-list must not reach (domain_denied: any port without one)
  // When valid, the proxy's end of a policy channel (policy_channel.h): the supervisor replaces
  // `allow` and `deny` there while the proxy runs, and the connections they no longer allow are cut.
  int policy_fd = -1;
  bool allow_any = false;            // the `open` policy: every name (internal addresses stay refused)...
  std::vector<uint16_t> open_ports;  // ...on 80, 443 and these ports only (the manifest's network.open_ports)
  std::string list_name;             // named in refusals: "... not in this sandbox's allow-list (<list_name>)"
  NetEventSink on_event;             // may be empty; calls are serialized
  // Defaults to host_address_reason (local_networks.h: the fixed ranges and the host's own networks)
  // under `open`, to internal_address_reason (address_check.h: the fixed ranges) for an allow-list,
  // whose names may be on the host's LAN. Replacing it opens whatever it lets through: only tests do.
  AddressCheck address_check;
  ProxyLimits limits;
  // A CONNECT to a name on one of these ports must open with a TLS ClientHello for that name (security
  // review L3): shared front ends route by name there. Elsewhere a tunnel carries any protocol.
  std::vector<uint16_t> server_name_ports{std::begin(kOpenPorts), std::end(kOpenPorts)};
  // When set, the Proxy-Authorization value every request must carry (proxy_credential.h), else 407.
  std::string credential;
};

// Serves until `stop_fd` becomes readable (forever when -1), then ends every connection and returns.
// Never fails on what clients send (malformed input gets 400); fails only for a broken listener.
// Runs in the host network namespace; the listener lives in the sandbox's.
Status serve_proxy(int listener_fd, const ProxyConfig& config, int stop_fd = -1);

// The client side of the health name, on a connection to the proxy the caller opened (nonblocking; it
// stays the caller's): asks, and returns the proxy's answer or what went wrong.
std::string ask_proxy_health(int fd, std::chrono::milliseconds timeout);

}  // namespace tnk::net
