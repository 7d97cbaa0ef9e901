// The host's own networks as the egress proxy sees them: the addresses of the interfaces of the
// network namespace it connects from, and the on-link prefix of each. A destination there is the host
// itself (every service bound to 0.0.0.0 or [::], reached over `lo`) or a neighbour on its LAN, which
// the fixed ranges of address_check.h miss when the host has a public IPv4 or a global IPv6 address.
#pragma once

#include <sys/socket.h>

#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace tnk::net {

struct InterfaceAddress {
  std::string interface;     // "eth0"
  sockaddr_storage address;  // AF_INET or AF_INET6; the port is ignored
  int prefix_length = 0;     // of its on-link network: 24 for 198.51.100.1/24
};

// The interfaces' addresses as the kernel has them now (getifaddrs); other families are left out.
Result<std::vector<InterfaceAddress>> local_interface_addresses();

// "address of this host's interface eth0", "on-link network of eth0", or nullopt when `address` is
// neither. An IPv4-mapped IPv6 address is judged as its IPv4 address.
std::optional<std::string> local_network_reason(const sockaddr_storage& address,
                                                const std::vector<InterfaceAddress>& interfaces);

// What the `open` proxy refuses by default: the fixed internal ranges, then the host's current
// interfaces, listed anew for every decision. When they cannot be listed, everything is refused.
std::optional<std::string> host_address_reason(const sockaddr_storage& address);

}  // namespace tnk::net
