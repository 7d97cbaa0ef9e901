// A TCP port as users and clients write it: decimal digits only, 1 to 65535. One parser for the
// policy's port lists and forwards, the allow-list's "name:port" entries and HTTP's Host and CONNECT
// targets, so that all three accept the same words.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tnk {

std::optional<uint16_t> parse_port(std::string_view text);

}  // namespace tnk
