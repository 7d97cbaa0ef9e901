// One egress-proxy connection, from the request head to the end of the relay (internal to proxy.cc).
#pragma once

#include <mutex>
#include <string>

#include "core/unique_fd.h"
#include "net/live_allow.h"
#include "net/proxy.h"

namespace tnk::net {

// What all connections of one serve_proxy share: the config, the effective address check, the lists
// in force (which the supervisor may replace), and the lock that serializes on_event calls.
struct ProxyShared {
  const ProxyConfig& config;
  AddressCheck address_check;
  LiveAllowList live;
  std::mutex event_mu;

  void report(const NetEvent& event);
};

void serve_proxy_connection(UniqueFd client, ProxyShared& shared, int stop_fd);

// A complete "HTTP/1.1 <status> ..." answer of the proxy itself (a refusal, or the health answer) with
// a one-line plain-text body and Connection: close; `extra_headers` are whole "Name: value\r\n" lines.
std::string proxy_answer(int status, const std::string& body_line, const std::string& extra_headers = "");

// "10 s", or "250 ms" below a second.
std::string duration_text(std::chrono::milliseconds duration);

}  // namespace tnk::net
