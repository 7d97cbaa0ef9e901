// The lists a running egress proxy decides by, which the supervisor may replace at any time
// (`tnk sandbox allow`, `deny`, a rule's expiry), and the connections they let through: a replacement
// cuts every open connection it no longer allows. Shared by the proxy's connection threads. Under the
// `open` policy every name passes on its open ports, less what `deny` covers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace tnk::net {

class LiveAllowList {
 public:
  // `any_name_ports`: the ports on which every name passes (the `open` policy's); empty for an allow-list.
  LiveAllowList(std::vector<std::string> allow, std::vector<std::string> deny,
                std::vector<uint16_t> any_name_ports = {})
      : allow_(std::move(allow)), deny_(std::move(deny)), any_name_ports_(std::move(any_name_ports)) {}

  struct Admission {
    bool allowed = false;
    std::string rule;        // allowed: the entry that allowed it ("open": an open port); refused by a deny: that entry
    bool denied = false;     // refused by a deny entry (rather than missing from the allow-list)
    bool port_only = false;  // refused although listed on another port
    uint64_t ticket = 0;     // allowed: the connection's registration, for attach() and release()
  };
  // Judges host:port by the lists in force and, when allowed, registers `client_fd` in the same step:
  // no replacement can fall between the decision and the registration.
  Admission admit(std::string_view host, uint16_t port, int client_fd);
  // The admitted connection's upstream socket, to be cut with it. False when a replacement cut the
  // connection meanwhile: the caller must not relay.
  bool attach(uint64_t ticket, int upstream_fd);
  // Whether a replacement cut it.
  bool was_cut(uint64_t ticket);
  // Unregisters, before the connection's descriptors close.
  void release(uint64_t ticket);

  // Puts new lists in force and shuts down (both ways) the sockets of every registered connection they
  // do not allow, which ends its relay. Returns how many were cut.
  std::size_t replace(std::vector<std::string> allow, std::vector<std::string> deny);

 private:
  struct Open {
    std::string host;
    uint16_t port = 0;
    int client_fd = -1, upstream_fd = -1;
    bool cut = false;
  };
  Admission judge(std::string_view host, uint16_t port) const;  // under mu_

  std::mutex mu_;
  std::vector<std::string> allow_, deny_;
  const std::vector<uint16_t> any_name_ports_;
  std::map<uint64_t, Open> open_;
  uint64_t next_ticket_ = 1;
};

}  // namespace tnk::net
