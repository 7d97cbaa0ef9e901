// Which addresses a local server listens on, from the kernel's socket tables (/proc/net/tcp, tcp6):
// doctor's check that the inference server is not reachable from the network. Pure parsing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tnk::inference {

struct Listener {
  std::string address;  // "127.0.0.1", "::", "192.168.1.5"
  uint16_t port = 0;
  bool loopback = false;  // 127.0.0.0/8, ::1, ::ffff:127.x
  bool wildcard = false;  // 0.0.0.0 or ::: every interface
};

// The listening sockets (state 0A) of one table; `ipv6` for tcp6's 32-digit addresses. Lines that do
// not parse are skipped.
std::vector<Listener> parse_proc_net_tcp(std::string_view table, bool ipv6);

// "0.0.0.0:8080", "[::]:8080".
std::string to_string(const Listener& listener);

}  // namespace tnk::inference
