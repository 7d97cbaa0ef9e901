#include "net/local_networks.h"

#include <linux/rtnetlink.h>

#include "net/address_check.h"

namespace tnk::net {

std::optional<std::string> local_route_reason(const RouteAnswer& route) {
  std::string interface = route.interface.empty() ? "#" + std::to_string(route.interface_index) : route.interface;
  int whole = route.family == AF_INET ? 32 : 128;
  switch (route.type) {
    case RTN_LOCAL:
      if (route.prefix_length == whole) return "address of this host's interface " + interface;
      return "local route of this host on " + interface;  // AnyIP: the host answers the whole prefix
    case RTN_ANYCAST: return "anycast address of this host on " + interface;
    case RTN_BROADCAST: return "broadcast address of " + interface;
    case RTN_UNICAST:
      if (route.via_gateway || route.prefix_length == 0) return std::nullopt;
      return "on-link network of " + interface;
    default: return std::nullopt;
  }
}

std::optional<std::string> host_address_reason(const sockaddr_storage& address) {
  if (auto fixed = internal_address_reason(address)) return fixed;
  auto route = query_route(address);
  if (!route) return "this host's routes cannot be asked (" + route.error().message + ")";
  if (!*route) return std::nullopt;
  return local_route_reason(**route);
}

}  // namespace tnk::net
