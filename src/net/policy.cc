#include "net/policy.h"

#include <algorithm>
#include <cctype>

namespace tnk {

std::optional<NetworkPolicy> parse_network_policy(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "none") return NetworkPolicy::kNone;
  if (lower == "inference" || lower == "restricted") return NetworkPolicy::kInference;
  if (lower == "allowlist") return NetworkPolicy::kAllowlist;
  if (lower == "open") return NetworkPolicy::kOpen;
  return std::nullopt;
}

std::string to_string(NetworkPolicy policy) {
  switch (policy) {
    case NetworkPolicy::kNone: return "none";
    case NetworkPolicy::kInference: return "inference";
    case NetworkPolicy::kAllowlist: return "allowlist";
    case NetworkPolicy::kOpen: return "open";
  }
  return "inference";
}

Result<PortForward> parse_port_forward(std::string_view text) {
  size_t colon = text.find(':');
  auto host = parse_port(text.substr(0, colon));
  auto guest = colon == std::string_view::npos ? host : parse_port(text.substr(colon + 1));
  if (!host || !guest) {
    return usage_error("invalid port forward '" + std::string(text) + "'",
                       "write HOSTPORT:GUESTPORT (8080:3000) or one PORT for both sides, each 1-65535");
  }
  return PortForward{*host, *guest};
}

std::string to_string(const PortForward& forward) {
  return std::to_string(forward.host_port) + ":" + std::to_string(forward.guest_port);
}

}  // namespace tnk
