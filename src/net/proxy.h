// The egress proxy: a minimal HTTP/1.1 forward proxy on a listener inside the sandbox's network
// namespace. It serves CONNECT tunnels and plain-http absolute-form requests to hosts on the
// allow-list, resolves names itself, refuses any destination that resolves to a host-internal address
// (DNS rebinding included), connects to the address it checked, and reports every decision.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace tnk::net {

// One decision. Refusals are reported at once (allowed=false, bytes 0); an allowed connection is
// reported when it ends, with `reason` saying how: "closed", "idle timeout", "stopped", "error: ..."
// or why the upstream could not be reached ("cannot resolve ...", "... timed out").
// A client that leaves before sending a complete request head is not reported.
struct ProxyEvent {
  bool allowed = false;
  std::string host;     // from the request target; empty when the request could not be parsed
  std::string address;  // the address connected to, or the refused one; empty when none
  uint16_t port = 0;
  std::string rule;         // the allow-list entry that matched; empty when none did
  std::string reason;       // for refusals: "not in allow-list", "host-internal address (loopback)", "bad request: ..."
  uint64_t bytes_up = 0;    // delivered to the destination (for plain http: the rewritten head and the body)
  uint64_t bytes_down = 0;  // delivered to the client (not counting the proxy's own "200 Connection established")
};

// Returns why an address must not be reached (the kind, e.g. "loopback"), or nullopt to allow it.
using AddressCheck = std::function<std::optional<std::string>(const sockaddr_storage&)>;

struct ProxyLimits {
  std::size_t max_connections = 256;                  // more get 503
  std::chrono::milliseconds head_timeout{10'000};     // to receive the request head, else 408
  std::chrono::milliseconds connect_timeout{10'000};  // resolve + connect, else 504
  std::chrono::milliseconds idle_timeout{120'000};    // a tunnel without traffic is closed
};

struct ProxyConfig {
  std::vector<std::string> allow;  // entries as domain_match.h describes
  std::string list_name;           // named in refusals: "... not in this sandbox's allow-list (<list_name>)"
  std::function<void(const ProxyEvent&)> on_event;  // may be empty; calls are serialized
  // Defaults to internal_address_reason. Replacing it opens whatever it lets through: only tests do.
  AddressCheck address_check;
  ProxyLimits limits;
};

// Serves until `stop_fd` becomes readable (forever when -1), then ends every connection and returns.
// Never fails on what clients send (malformed input gets 400); fails only for a broken listener.
// Runs in the host network namespace; the listener lives in the sandbox's.
Status serve_proxy(int listener_fd, const ProxyConfig& config, int stop_fd = -1);

}  // namespace tnk::net
