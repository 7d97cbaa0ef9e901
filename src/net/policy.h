// Network policy names shared by tnk.toml (`default_network`) and manifests (`security.network`).
#pragma once

#include <optional>
#include <string>
#include <string_view>

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
inline constexpr const char* kNetworkPolicyNames = "none, inference, allowlist, open (or the original's restricted)";

}  // namespace tnk
