// URL parsing for the inference endpoint: just enough of RFC 3986 for http://host:port/path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace tnk::inference {

struct Url {
  std::string scheme;  // "http" or "https", lowercased
  std::string host;    // hostname or IP literal; IPv6 without the brackets
  uint16_t port = 80;  // 80 for http, 443 for https unless given
  std::string path;    // path and query, always starting with '/'; the fragment is dropped

  bool host_is_ipv6() const { return host.find(':') != std::string::npos; }
  // The value of the Host header: "example:8080", "[::1]:8080"; the port is left out when default.
  std::string host_header() const;
};

// Accepts http:// and https:// URLs. Rejects other schemes, user info ("user@host"), empty hosts
// and ports outside 1..65535, each with a message naming the URL.
Result<Url> parse_url(std::string_view text);

// An OpenAI-style URL (".../v1") without its trailing "/v1" or "/v1/": the root that Anthropic's and
// Ollama's clients add their own paths to. Other URLs are returned as they are.
std::string endpoint_root(std::string_view url);

}  // namespace tnk::inference
