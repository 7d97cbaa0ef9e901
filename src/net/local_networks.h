// The host's own networks as the egress proxy sees them, asked of the kernel's routing (security review
// H2, R3-L5) in the network namespace it connects from: a destination the kernel routes as local (an
// address of the host, or any address of a `local` route: AnyIP), as a broadcast, or on-link without a
// gateway (the LAN of an interface, a /128 host's /64 from router advertisements, a VPN's prefix) is the
// host itself or a neighbour, which the fixed ranges of address_check.h miss when the host has a
// public IPv4 or a global IPv6 address. A default route without a gateway (a point-to-point uplink)
// is the way out, not a LAN.
#pragma once

#include <sys/socket.h>

#include <optional>
#include <string>

#include "net/route_query.h"

namespace tnk::net {

// "address of this host's interface eth0", "local route of this host on lo", "broadcast address of
// eth0", "on-link network of eth0", or nullopt when the route leaves through a gateway (or goes nowhere:
// unreachable, blackhole and prohibit routes let no connection through).
std::optional<std::string> local_route_reason(const RouteAnswer& route);

// What the `open` proxy refuses by default: the fixed internal ranges, then what the kernel routes to
// the host or its links, asked anew for every decision. When the kernel cannot be asked, the address
// is refused.
std::optional<std::string> host_address_reason(const sockaddr_storage& address);

}  // namespace tnk::net
