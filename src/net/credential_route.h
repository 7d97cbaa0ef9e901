// A credential route (docs/inference.md, "Credential routes"): requests to /r/<name>/<rest> inside the
// sandbox go to https://<upstream>/<rest> with a header that the host adds, so that the sandbox uses a
// key it never sees. This module holds what is pure about a route: its rules (which methods and paths
// pass), the header's template, and the request target's parts. The relay is supervisor/route_gateway.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tnk::net {

// Where a session finds the routes: http://<relay host>:kRoutesPort/r/<name>/...
inline constexpr std::string_view kRoutesPrefix = "/r/";

struct CredentialRoute {
  std::string name;                  // letters, digits, '-'
  std::string host;                  // the upstream's name (SNI and the certificate's name are checked against it)
  uint16_t port = 443;               // the upstream's port
  std::string ca_file;               // a PEM file of CAs trusted besides the system's; empty: the system's only
  std::vector<std::string> methods;  // upper-case; empty: every method
  std::vector<std::string> paths;    // path prefixes (docs: "paths"); empty: every path
  std::string header_name;           // "Authorization"
  std::string header_value;          // rendered: holds the credential; never logged, never in the sandbox
  std::vector<std::string> secrets;  // what is masked in answers (credential_secrets)
};

// The placeholders a header template may hold: the credential as it is, or HTTP Basic's
// "Basic " + base64("USER:credential") (git over HTTPS to GitHub: "Authorization: {basic:x-access-token}").
inline constexpr std::string_view kCredentialPlaceholder = "{credential}";
inline constexpr std::string_view kBasicPlaceholder = "{basic:";

// "Name: value-template" split and checked: a header name (an HTTP token that is not hop-by-hop, Host or
// Content-Length), a value holding exactly one placeholder and no control characters. The error says
// what is wrong, without the template's value (it may hold a literal secret).
struct HeaderTemplate {
  std::string name;
  std::string value;  // with its placeholder
};
Result<HeaderTemplate> parse_header_template(std::string_view text);

// The template's value with its placeholder replaced by `credential` (or its Basic form).
std::string render_header_value(const HeaderTemplate& header, const std::string& credential);

// What an answer must not show: the credential, and for {basic:USER} its base64 form (the rendered value
// holds one of them, so masking these masks it too).
std::vector<std::string> credential_secrets(const HeaderTemplate& header, const std::string& credential);

// The upstream as a URL: "https://host", with ":port" unless it is 443.
std::string upstream_url(const std::string& host, uint16_t port);

// A route name: 1 to 63 letters, digits and '-', not starting with '-'.
bool valid_route_name(std::string_view name);

// The route's name and the rest of an origin-form target "/r/<name>/<rest>?q": {name, "/<rest>?q"}
// ("/" when nothing follows the name). nullopt when the target is not below kRoutesPrefix.
struct RouteTarget {
  std::string name;
  std::string rest;
};
std::optional<RouteTarget> split_route_target(std::string_view target);

// Why `route` refuses `method` on `path` (no query), or nullopt when it passes: the path must be plain
// (net/path_check.h), its method listed (if the route lists any), its path below one of the route's
// prefixes (if it lists any). A prefix that ends in '/' covers what is below it; one that does not covers
// itself and what is below it ("/o/r.git" covers "/o/r.git/info/refs", not "/o/r.gitx").
std::optional<std::string> route_refusal(const CredentialRoute& route, std::string_view method, std::string_view path);

}  // namespace tnk::net
