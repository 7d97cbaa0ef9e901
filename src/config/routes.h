// tnk.toml's [[routes]]: credential routes as the user wrote them, checked (docs/inference.md,
// "Credential routes"). The credential itself is not here: route_source.h resolves it when a sandbox
// starts, and only the supervisor's config carries it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "net/credential_route.h"

namespace tnk {

struct RouteSetting {
  std::string name;
  std::string host;  // from upstream = "https://host[:port]"
  uint16_t port = 443;
  net::HeaderTemplate header;        // header = "Name: value with {credential}"
  std::string source;                // "env:NAME", "file:PATH" or "cmd:PROGRAM ARG..." as written
  std::vector<std::string> methods;  // upper-case; empty: every method
  std::vector<std::string> paths;    // path prefixes; empty: every path
  std::filesystem::path ca_file;     // expanded (~, $HOME); empty: the system's CAs only
  int line = 0;                      // of the [[routes]] header in tnk.toml
};

// The keys a [[routes]] table may hold, for messages.
inline constexpr std::string_view kRouteKeys = "name, upstream, header, source, methods, paths, ca_file";

// The keys an [[ssh_routes]] table may hold, for messages.
inline constexpr std::string_view kSshRouteKeys = "host, port, host_key, identities";
// An SSH route's host: a DNS name (letters, digits, '-', '.') or an IPv4 address; never a pattern.
bool valid_ssh_route_host(std::string_view host);

// Each checker returns what is wrong as the end of "key 'K' must be ...", or the value.
// "https://host" or "https://host:port" (an optional "/" after it; no path, query or user info).
Result<std::pair<std::string, uint16_t>> parse_route_upstream(std::string_view text);
// "env:NAME" (a variable name), "file:PATH" (non-empty) or "cmd:PROGRAM ARG..." (at least a program).
Status check_route_source(std::string_view text);
// An HTTP method: upper-case letters.
bool valid_route_method(std::string_view method);
// A path prefix: starts with '/', plain (net/path_check.h) but for a trailing '/'.
bool valid_route_path(std::string_view path);

}  // namespace tnk
