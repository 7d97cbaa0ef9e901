// The vm's connect bridge, both ends' words (docs/vm-backend.md, "Port forwards"): tnk-agent listens
// in the guest on <eth0's address>:kBridgePort; QEMU forwards a port of 127.0.0.1 in its own,
// otherwise empty, network namespace there (hostfwd; vm::kBridgeHostPort). The supervisor's relays connect, send one
// request line naming an IPv4 address and port, and the bridge connects to it from inside the guest (the guest's
// loopback for a port forward, the guestfwd address for the proxy's health check), answers one line, then relays raw
// bytes both ways. The bridge reaches nothing a guest process could not reach.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace tnk::agent {

// A privileged port: only guest root could take it before tnk-agent, which binds it at boot.
inline constexpr uint16_t kBridgePort = 1023;
inline constexpr std::size_t kBridgeMaxLine = 128;  // request and reply lines, with their '\n'

// The SSH routes' agent in a vm (docs/network.md, "SSH routes"): tnk-agent listens on this unix socket
// in the guest and relays each connection to the host relays' address at kSshAgentPort, where the
// supervisor's tnk-ssh-agent listens when the sandbox has SSH routes (else the connection is refused).
// The path is supervisor::kSshAgentSocket's, which sessions get as SSH_AUTH_SOCK.
inline constexpr const char* kSshAgentSocket = "/run/tnk/ssh-agent.sock";
inline constexpr uint16_t kSshAgentPort = 3131;

struct BridgeTarget {
  std::string ip;  // IPv4 literal
  uint16_t port = 0;
};

// "tnk-connect <ip> <port>\n"
std::string bridge_request(const BridgeTarget& target);
// The request line without its '\n'; an error names the line.
Result<BridgeTarget> parse_bridge_request(std::string_view line);

// "ok\n", or "error <errno> <message>\n" when the guest could not connect.
std::string bridge_reply(int sys_errno, std::string_view message);
// The reply line without its '\n': ok, or the guest's error (with its errno).
Status parse_bridge_reply(std::string_view line);

}  // namespace tnk::agent
