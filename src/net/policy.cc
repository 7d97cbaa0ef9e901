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

}  // namespace tnk
