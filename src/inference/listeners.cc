#include "inference/listeners.h"

#include <arpa/inet.h>

#include <array>
#include <charconv>
#include <optional>
#include <sstream>

namespace tnk::inference {
namespace {

constexpr std::string_view kListenState = "0A";

std::optional<uint32_t> hex32(std::string_view text) {
  uint32_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The kernel prints each 32-bit word of an address in host byte order (little-endian here).
std::optional<Listener> parse_address(std::string_view field, bool ipv6) {
  size_t colon = field.find(':');
  const size_t digits = ipv6 ? 32 : 8;
  if (colon != digits) return std::nullopt;
  auto port = hex32(field.substr(colon + 1));
  if (!port || *port > 0xffff) return std::nullopt;
  std::array<unsigned char, 16> bytes{};
  for (size_t word = 0; word < digits / 8; ++word) {
    auto value = hex32(field.substr(word * 8, 8));
    if (!value) return std::nullopt;
    for (size_t i = 0; i < 4; ++i) bytes[word * 4 + i] = static_cast<unsigned char>((*value >> (8 * i)) & 0xff);
  }
  Listener l;
  l.port = static_cast<uint16_t>(*port);
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(ipv6 ? AF_INET6 : AF_INET, bytes.data(), text, sizeof text);
  l.address = text;
  const unsigned char* v4 = bytes.data();
  bool mapped = ipv6;
  for (size_t i = 0; ipv6 && i < 12; ++i) mapped = mapped && bytes[i] == (i < 10 ? 0 : 0xff);
  if (mapped) v4 = bytes.data() + 12;
  bool zero = true;
  for (size_t i = 0; i < (ipv6 ? 16u : 4u); ++i) zero = zero && bytes[i] == 0;
  bool v6_loopback = ipv6 && !mapped && l.address == "::1";
  l.wildcard = zero || (mapped && v4[0] == 0 && v4[1] == 0 && v4[2] == 0 && v4[3] == 0);
  l.loopback = v6_loopback || ((!ipv6 || mapped) && v4[0] == 127);
  return l;
}

}  // namespace

std::vector<Listener> parse_proc_net_tcp(std::string_view table, bool ipv6) {
  std::vector<Listener> out;
  std::istringstream lines{std::string(table)};
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    if (!(fields >> slot >> local >> remote >> state) || state != kListenState) continue;
    if (auto listener = parse_address(local, ipv6)) out.push_back(*listener);
  }
  return out;
}

std::string to_string(const Listener& listener) {
  bool v6 = listener.address.find(':') != std::string::npos;
  return (v6 ? "[" + listener.address + "]" : listener.address) + ":" + std::to_string(listener.port);
}

}  // namespace tnk::inference
