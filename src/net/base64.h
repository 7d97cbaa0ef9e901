// Standard base64 (RFC 4648): the proxy's Basic credentials and SSH's keys and fingerprints.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tnk::net {

// `pad` adds the '=' padding (OpenSSH's fingerprints leave it out).
std::string base64_encode(std::string_view data, bool pad = true);
// Padding optional; nullopt for a character outside the alphabet or an impossible length.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace tnk::net
