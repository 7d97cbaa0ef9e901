#include "net/address_check.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <array>
#include <cstdint>
#include <cstring>

namespace tnk::net {
namespace {

struct Range4 {
  uint32_t base;
  int prefix;
  const char* reason;
};

constexpr uint32_t ip4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) { return a << 24 | b << 16 | c << 8 | d; }

// Order matters only where ranges nest: the broadcast address is inside 240/4.
constexpr std::array<Range4, 11> kInternal4 = {{
    {ip4(0, 0, 0, 0), 8, "unspecified"},
    {ip4(127, 0, 0, 0), 8, "loopback"},
    {ip4(10, 0, 0, 0), 8, "private"},
    {ip4(172, 16, 0, 0), 12, "private"},
    {ip4(192, 168, 0, 0), 16, "private"},
    {ip4(100, 64, 0, 0), 10, "private (CGNAT)"},
    {ip4(169, 254, 0, 0), 16, "link-local"},
    {ip4(224, 0, 0, 0), 4, "multicast"},
    {ip4(255, 255, 255, 255), 32, "broadcast"},
    {ip4(240, 0, 0, 0), 4, "reserved"},
    {ip4(192, 0, 0, 0), 24, "reserved"},
}};

std::optional<std::string> reason4(uint32_t host_order) {
  for (const Range4& r : kInternal4) {
    uint32_t mask = r.prefix == 0 ? 0 : ~uint32_t{0} << (32 - r.prefix);
    if ((host_order & mask) == r.base) return std::string(r.reason);
  }
  return std::nullopt;
}

uint32_t embedded4(const uint8_t* bytes) {
  return uint32_t{bytes[0]} << 24 | uint32_t{bytes[1]} << 16 | uint32_t{bytes[2]} << 8 | uint32_t{bytes[3]};
}

bool has_prefix(const uint8_t* a, std::initializer_list<uint8_t> prefix) {
  return std::memcmp(a, prefix.begin(), prefix.size()) == 0;
}

// An IPv4 address carried inside an IPv6 one is judged as the IPv4 address.
std::optional<std::string> wrapped(const uint8_t* v4, const char* how) {
  auto inner = reason4(embedded4(v4));
  if (!inner) return std::nullopt;
  return *inner + " (" + how + ")";
}

std::optional<std::string> reason6(const in6_addr& address) {
  const uint8_t* a = address.s6_addr;
  static constexpr uint8_t kZero[16] = {};
  if (std::memcmp(a, kZero, 15) == 0 && (a[15] == 0 || a[15] == 1)) return a[15] == 0 ? "unspecified" : "loopback";
  if (has_prefix(a, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff})) return wrapped(a + 12, "IPv4-mapped");
  if (std::memcmp(a, kZero, 12) == 0) return "reserved (IPv4-compatible)";
  if (has_prefix(a, {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0})) return wrapped(a + 12, "NAT64");
  if (has_prefix(a, {0, 0x64, 0xff, 0x9b, 0, 1})) return "private (local NAT64)";
  if (has_prefix(a, {0x20, 0x02})) return wrapped(a + 2, "6to4");
  if ((a[0] & 0xfe) == 0xfc) return "private";
  if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) return "link-local";
  if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0) return "private (site-local)";
  if (a[0] == 0xff) return "multicast";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> internal_address_reason(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    sockaddr_in v4;
    std::memcpy(&v4, &address, sizeof v4);
    return reason4(ntohl(v4.sin_addr.s_addr));
  }
  if (address.ss_family == AF_INET6) {
    sockaddr_in6 v6;
    std::memcpy(&v6, &address, sizeof v6);
    return reason6(v6.sin6_addr);
  }
  return "unsupported address family";
}

std::string address_to_string(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    sockaddr_in v4;
    std::memcpy(&v4, &address, sizeof v4);
    if (::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text) != nullptr) return text;
  } else if (address.ss_family == AF_INET6) {
    sockaddr_in6 v6;
    std::memcpy(&v6, &address, sizeof v6);
    if (::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text) != nullptr) return text;
  }
  return "?";
}

}  // namespace tnk::net
