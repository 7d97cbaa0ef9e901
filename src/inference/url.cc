#include "inference/url.h"

#include <algorithm>
#include <cctype>

namespace tnk::inference {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

Error bad_url(std::string_view text, const std::string& why) {
  return usage_error("invalid URL '" + std::string(text) + "': " + why,
                     "write it as http://HOST:PORT/PATH, e.g. http://127.0.0.1:8080/v1");
}

bool valid_hostname_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' || c == '_';
}

bool valid_ipv6_char(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == ':' || c == '.'; }

// Splits "host:port" or "[v6]:port" into the Url's host and port.
Status parse_authority(std::string_view text, std::string_view authority, Url& url) {
  if (authority.find('@') != std::string_view::npos) {
    return bad_url(text, "user info (user@host) is not supported");
  }
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return bad_url(text, "missing ']' after the IPv6 address");
    host = authority.substr(1, close - 1);
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return bad_url(text, "unexpected text after ']'");
    if (!rest.empty()) port = rest.substr(1);
    if (host.empty() || !std::all_of(host.begin(), host.end(), valid_ipv6_char)) {
      return bad_url(text, "'" + std::string(host) + "' is not an IPv6 address");
    }
  } else {
    auto colon = authority.find(':');
    if (colon != std::string_view::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
    }
    if (host.empty()) return bad_url(text, "no host");
    if (!std::all_of(host.begin(), host.end(), valid_hostname_char)) {
      return bad_url(text, "'" + std::string(host) + "' is not a host name or IPv4 address");
    }
  }
  url.host = lower(host);
  if (port.empty()) return ok_status();
  if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return bad_url(text, "port '" + std::string(port) + "' is not a number from 1 to 65535");
  }
  unsigned long value = std::stoul(std::string(port));
  if (value == 0 || value > 65535) {
    return bad_url(text, "port '" + std::string(port) + "' is not a number from 1 to 65535");
  }
  url.port = static_cast<uint16_t>(value);
  return ok_status();
}

}  // namespace

std::string Url::host_header() const {
  std::string h = host_is_ipv6() ? "[" + host + "]" : host;
  bool default_port = (scheme == "http" && port == 80) || (scheme == "https" && port == 443);
  if (!default_port) h += ":" + std::to_string(port);
  return h;
}

Result<Url> parse_url(std::string_view text) {
  auto sep = text.find("://");
  if (sep == std::string_view::npos) return bad_url(text, "no scheme (expected http://)");
  Url url;
  url.scheme = lower(text.substr(0, sep));
  if (url.scheme == "https") {
    url.port = 443;
  } else if (url.scheme != "http") {
    return bad_url(text, "scheme '" + url.scheme + "' is not http");
  }
  std::string_view rest = text.substr(sep + 3);
  rest = rest.substr(0, rest.find('#'));
  auto path_start = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, path_start);
  TNK_RETURN_IF_ERROR(parse_authority(text, authority, url));
  std::string_view path = path_start == std::string_view::npos ? "" : rest.substr(path_start);
  for (char c : path) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return bad_url(text, "spaces and control characters in the path must be percent-encoded");
    }
  }
  url.path = path.empty() || path.front() != '/' ? "/" + std::string(path) : std::string(path);
  return url;
}

std::string endpoint_root(std::string_view url) {
  if (url.ends_with('/')) url.remove_suffix(1);
  if (url.ends_with("/v1")) url.remove_suffix(3);
  return std::string(url);
}

}  // namespace tnk::inference
