#include "net/local_networks.h"

#include <ifaddrs.h>
#include <netinet/in.h>

#include <array>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>

#include "net/address_check.h"

namespace tnk::net {
namespace {

// An address as its family and network-order bytes (4 or 16 used). IPv4-mapped IPv6 becomes IPv4:
// the kernel connects it as the IPv4 address.
struct Bytes {
  int family = AF_UNSPEC;
  std::array<uint8_t, 16> b{};
  int bits = 0;
};

Bytes bytes_of(const sockaddr_storage& address) {
  Bytes out;
  if (address.ss_family == AF_INET) {
    sockaddr_in v4;
    std::memcpy(&v4, &address, sizeof v4);
    out = {AF_INET, {}, 32};
    std::memcpy(out.b.data(), &v4.sin_addr, 4);
  } else if (address.ss_family == AF_INET6) {
    sockaddr_in6 v6;
    std::memcpy(&v6, &address, sizeof v6);
    static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(v6.sin6_addr.s6_addr, kMapped, sizeof kMapped) == 0) {
      out = {AF_INET, {}, 32};
      std::memcpy(out.b.data(), v6.sin6_addr.s6_addr + 12, 4);
    } else {
      out = {AF_INET6, {}, 128};
      std::memcpy(out.b.data(), v6.sin6_addr.s6_addr, 16);
    }
  }
  return out;
}

// Whether the first `prefix` bits of a and b agree (same family, as bytes_of gives them).
bool same_prefix(const Bytes& a, const Bytes& b, int prefix) {
  for (int bit = 0; bit < prefix && bit < a.bits; bit += 8) {
    int left = prefix - bit;
    auto mask = static_cast<uint8_t>(left >= 8 ? 0xff : 0xff << (8 - left));
    auto i = static_cast<size_t>(bit / 8);
    if ((a.b[i] & mask) != (b.b[i] & mask)) return false;
  }
  return true;
}

int prefix_of(const sockaddr* netmask) {
  if (netmask == nullptr) return -1;  // no mask: only the address itself counts
  sockaddr_storage ss{};
  std::memcpy(&ss, netmask, netmask->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
  ss.ss_family = netmask->sa_family;
  Bytes mask = bytes_of(ss);
  int ones = 0;
  for (int i = 0; i < mask.bits / 8; ++i) ones += std::popcount(mask.b[static_cast<size_t>(i)]);
  return ones;
}

struct IfaddrsDeleter {
  void operator()(ifaddrs* list) const { ::freeifaddrs(list); }
};

}  // namespace

Result<std::vector<InterfaceAddress>> local_interface_addresses() {
  ifaddrs* raw = nullptr;
  if (::getifaddrs(&raw) != 0) return sys_error(errno, "listing this host's network interfaces");
  std::unique_ptr<ifaddrs, IfaddrsDeleter> list(raw);
  std::vector<InterfaceAddress> out;
  for (const ifaddrs* ifa = list.get(); ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr) continue;
    int family = ifa->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    InterfaceAddress entry;
    entry.interface = ifa->ifa_name;
    entry.address = {};
    std::memcpy(&entry.address, ifa->ifa_addr, family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    int prefix = prefix_of(ifa->ifa_netmask);
    entry.prefix_length = prefix < 0 ? (family == AF_INET ? 32 : 128) : prefix;
    out.push_back(std::move(entry));
  }
  return out;
}

std::optional<std::string> local_network_reason(const sockaddr_storage& address,
                                                const std::vector<InterfaceAddress>& interfaces) {
  Bytes destination = bytes_of(address);
  if (destination.family == AF_UNSPEC) return std::nullopt;
  // An exact match anywhere wins over an on-link match elsewhere: it names the more precise reason.
  for (const InterfaceAddress& entry : interfaces) {
    Bytes own = bytes_of(entry.address);
    if (own.family == destination.family && own.b == destination.b) {
      return "address of this host's interface " + entry.interface;
    }
  }
  for (const InterfaceAddress& entry : interfaces) {
    Bytes own = bytes_of(entry.address);
    if (own.family == destination.family && same_prefix(own, destination, entry.prefix_length)) {
      return "on-link network of " + entry.interface;
    }
  }
  return std::nullopt;
}

std::optional<std::string> host_address_reason(const sockaddr_storage& address) {
  if (auto fixed = internal_address_reason(address)) return fixed;
  auto interfaces = local_interface_addresses();
  if (!interfaces) return "this host's interfaces cannot be listed (" + interfaces.error().message + ")";
  return local_network_reason(address, *interfaces);
}

}  // namespace tnk::net
