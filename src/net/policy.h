// Network policy names shared by tnk.toml (`default_network`) and manifests (`security.network`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "net/port.h"

namespace tnk {

enum class NetworkPolicy {
  kNone,       // nothing, not even the inference endpoint
  kInference,  // only the inference endpoint (the default)
  kAllowlist,  // the inference endpoint plus HTTP(S) to listed domains through the egress proxy
  kOpen,       // the internet, but still no host loopback service other than the inference endpoint
};

// Accepts our names and the original's `restricted` (its documented posture: inference only),
// case-insensitively.
std::optional<NetworkPolicy> parse_network_policy(std::string_view text);
std::string to_string(NetworkPolicy policy);
// Whether sandboxes under `policy` reach the internet through the egress proxy (allowlist, open).
inline bool has_egress_proxy(NetworkPolicy policy) {
  return policy == NetworkPolicy::kAllowlist || policy == NetworkPolicy::kOpen;
}
inline constexpr const char* kNetworkPolicyNames = "none, inference, allowlist, open (or the original's restricted)";

// A host port on 127.0.0.1 relayed to a port on the sandbox's own loopback (`ports` in a manifest,
// `tnk sandbox forward`).
struct PortForward {
  uint16_t host_port = 0;  // 0: any free port
  uint16_t guest_port = 0;
  bool operator==(const PortForward&) const = default;
};

// "8080:3000" (host:guest) or "3000" (the same port on both sides). The error says which forms work.
Result<PortForward> parse_port_forward(std::string_view text);
std::string to_string(const PortForward& forward);  // "8080:3000"

}  // namespace tnk
