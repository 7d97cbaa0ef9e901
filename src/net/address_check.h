// Which resolved addresses the egress proxy refuses: everything that reaches the host itself or its
// local networks (loopback, private, link-local and metadata, multicast...), also when wrapped in
// IPv6 (IPv4-mapped, NAT64, 6to4). This is what stops DNS rebinding onto host services.
#pragma once

#include <sys/socket.h>

#include <optional>
#include <string>

namespace tnk::net {

// The kind of host-internal address ("loopback", "private", "link-local", "loopback (IPv4-mapped)"...),
// or nullopt for an address on the internet. Unknown families count as internal.
std::optional<std::string> internal_address_reason(const sockaddr_storage& address);

// "192.0.2.1" or "2001:db8::1" (no port, no brackets); "?" for an unknown family.
std::string address_to_string(const sockaddr_storage& address);

}  // namespace tnk::net
