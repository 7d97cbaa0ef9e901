// Asks the kernel how it routes to an address (rtnetlink RTM_GETROUTE with RTM_F_FIB_MATCH: the route
// that matched, with its own prefix length, type and next hop), from the network namespace the caller
// connects from. The answer's bytes are parsed by a pure function, so that tests need no routes.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace tnk::net {

struct RouteAnswer {
  int family = AF_UNSPEC;        // of the route: AF_INET for an IPv4-mapped IPv6 address
  unsigned type = 0;             // RTN_UNICAST, RTN_LOCAL, RTN_BROADCAST, ...
  int prefix_length = 0;         // of the route that matched: 0 for a default route
  bool via_gateway = false;      // a next hop (RTA_GATEWAY, RTA_VIA) or several (RTA_MULTIPATH)
  uint32_t interface_index = 0;  // RTA_OIF; 0 when none
  std::string interface;         // its name ("eth0"); filled by query_route (RTM_GETLINK)
};

// The route to `address` (its port is ignored), or nullopt when the kernel has none (ENETUNREACH,
// EHOSTUNREACH: a connection there fails by itself). Fails when the kernel cannot be asked.
Result<std::optional<RouteAnswer>> query_route(const sockaddr_storage& address);

// The kernel's answer to request `seq`: its RTM_NEWROUTE message read, or nullopt for ENETUNREACH and
// EHOSTUNREACH; another error the kernel reports, or a message that does not parse, fails.
Result<std::optional<RouteAnswer>> parse_route_reply(std::string_view reply, uint32_t seq);

// The interface name (IFLA_IFNAME) in the kernel's answer to RTM_GETLINK request `seq`.
Result<std::string> parse_link_name_reply(std::string_view reply, uint32_t seq);

}  // namespace tnk::net
