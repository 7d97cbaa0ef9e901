#include "net/credential_route.h"

#include <algorithm>
#include <cctype>

#include "net/http_request.h"
#include "net/path_check.h"
#include "net/proxy_credential.h"

namespace tnk::net {
namespace {

bool token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// Headers the gateway itself sets or that end at the hop: a route must not replace them.
bool reserved_header(std::string_view lower) {
  for (std::string_view name : {"host", "content-length", "transfer-encoding", "connection", "keep-alive",
                                "proxy-connection", "proxy-authorization", "te", "trailer", "upgrade"}) {
    if (lower == name) return true;
  }
  return false;
}

// The placeholder at `at` in `value`: its length and, for {basic:USER}, the user ("" for {credential}).
struct Placeholder {
  std::size_t at = std::string::npos, length = 0;
  std::string user;
  bool basic = false;
};

Placeholder find_placeholder(std::string_view value) {
  Placeholder found;
  std::size_t plain = value.find(kCredentialPlaceholder), basic = value.find(kBasicPlaceholder);
  if (plain != std::string_view::npos && (basic == std::string_view::npos || plain < basic)) {
    found.at = plain;
    found.length = kCredentialPlaceholder.size();
    return found;
  }
  if (basic == std::string_view::npos) return found;
  std::size_t close = value.find('}', basic);
  if (close == std::string_view::npos) return found;
  found.at = basic;
  found.length = close + 1 - basic;
  found.user = std::string(value.substr(basic + kBasicPlaceholder.size(), close - basic - kBasicPlaceholder.size()));
  found.basic = true;
  return found;
}

bool below_prefix(std::string_view path, std::string_view prefix) {
  if (!path.starts_with(prefix)) return false;
  return prefix.ends_with('/') || path.size() == prefix.size() || path[prefix.size()] == '/';
}

}  // namespace

Result<HeaderTemplate> parse_header_template(std::string_view text) {
  const std::string hint = "for example \"Authorization: Bearer {credential}\" or \"Authorization: {basic:USER}\"";
  std::size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0) return failed("must be \"Name: value\"", hint);
  std::string_view name = text.substr(0, colon);
  if (!std::all_of(name.begin(), name.end(), token_char)) return failed("the header name is not an HTTP token", hint);
  if (reserved_header(ascii_lower(name))) {
    return failed("the header " + std::string(name) + " is set by tnk itself and cannot be a route's", hint);
  }
  std::string_view value = text.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  for (char c : value) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return failed("the header value has control characters", hint);
  }
  Placeholder first = find_placeholder(value);
  if (first.at == std::string::npos) return failed("the header value holds no {credential} or {basic:USER}", hint);
  if (first.basic && (first.user.empty() || first.user.find(':') != std::string::npos)) {
    return failed("{basic:USER} needs a user name without ':'", hint);
  }
  if (find_placeholder(value.substr(first.at + first.length)).at != std::string::npos) {
    return failed("the header value holds more than one placeholder", hint);
  }
  return HeaderTemplate{std::string(name), std::string(value)};
}

std::string render_header_value(const HeaderTemplate& header, const std::string& credential) {
  Placeholder placeholder = find_placeholder(header.value);
  if (placeholder.at == std::string::npos) return header.value;
  std::string filled = placeholder.basic ? basic_credential(placeholder.user, credential) : credential;
  std::string out = header.value;
  out.replace(placeholder.at, placeholder.length, filled);
  return out;
}

std::string upstream_url(const std::string& host, uint16_t port) {
  return "https://" + host_port_text(host, port, port != 443);
}

std::vector<std::string> credential_secrets(const HeaderTemplate& header, const std::string& credential) {
  std::vector<std::string> secrets = {credential};
  Placeholder placeholder = find_placeholder(header.value);
  if (placeholder.basic) secrets.push_back(basic_credential(placeholder.user, credential).substr(6));  // "Basic "
  return secrets;
}

bool valid_route_name(std::string_view name) {
  if (name.empty() || name.size() > 63 || name.front() == '-') return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-'; });
}

std::optional<RouteTarget> split_route_target(std::string_view target) {
  if (!target.starts_with(kRoutesPrefix)) return std::nullopt;
  std::string_view after = target.substr(kRoutesPrefix.size());
  std::size_t end = after.find_first_of("/?");
  RouteTarget split{std::string(after.substr(0, end)),
                    end == std::string_view::npos ? "/" : std::string(after.substr(end))};
  if (split.rest.starts_with('?')) split.rest.insert(0, "/");
  return split;
}

std::optional<std::string> route_refusal(const CredentialRoute& route, std::string_view method, std::string_view path) {
  std::string what = std::string(method) + " " + std::string(path);
  if (auto refusal = path_refusal(path, true)) return what + ": " + *refusal;
  if (!route.methods.empty() && std::find(route.methods.begin(), route.methods.end(), method) == route.methods.end()) {
    return what + ": the route '" + route.name + "' does not allow the method " + std::string(method);
  }
  if (!route.paths.empty() && std::none_of(route.paths.begin(), route.paths.end(),
                                           [&](const std::string& p) { return below_prefix(path, p); })) {
    return what + ": the path is outside the paths of the route '" + route.name + "'";
  }
  return std::nullopt;
}

}  // namespace tnk::net
