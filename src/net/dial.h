// Outgoing connections for the relays: name resolution that honours a deadline and the stop fd (the
// blocking getaddrinfo runs on a helper thread), and nonblocking connects. Errors carry ETIMEDOUT
// when the deadline passed and ECANCELED when the stop fd fired.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"
#include "net/socket_io.h"

namespace tnk::net {

struct Endpoint {
  sockaddr_storage address{};  // with the port set
  socklen_t length = 0;
};

// All TCP addresses of host:port, in getaddrinfo's order. IP literals are parsed without a lookup.
Result<std::vector<Endpoint>> resolve_tcp(const std::string& host, uint16_t port, Clock::time_point deadline,
                                          int stop_fd);

// Connects to the endpoints in order until one answers; returns the nonblocking socket and its endpoint.
Result<std::pair<UniqueFd, Endpoint>> connect_any(const std::vector<Endpoint>& endpoints, Clock::time_point deadline,
                                                  int stop_fd);

}  // namespace tnk::net
