#include "config/routes.h"

#include <algorithm>
#include <cctype>

#include "config/config_values.h"
#include "net/path_check.h"

namespace tnk {
namespace {

bool variable_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front())) != 0) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; });
}

}  // namespace

Result<std::pair<std::string, uint16_t>> parse_route_upstream(std::string_view text) {
  auto url = config::split_url(text);
  if (!url || url->scheme != "https") return failed("an https:// URL with a host, such as \"https://api.github.com\"");
  if (!url->userinfo.empty()) return failed("an https:// URL without user info (the credential comes from `source`)");
  if (!url->rest.empty() && url->rest != "/") return failed("an https:// URL without a path (\"https://host[:port]\")");
  uint16_t port = 443;
  if (!url->port.empty()) {
    auto parsed = config::parse_port(url->port);
    if (!parsed) return failed("an https:// URL whose port is from 1 to 65535");
    port = *parsed;
  }
  std::string host = url->host;
  std::transform(host.begin(), host.end(), host.begin(), [](unsigned char c) { return std::tolower(c); });
  return std::pair{host, port};
}

Status check_route_source(std::string_view text) {
  const std::string expect = "env:NAME, file:PATH or cmd:PROGRAM ARG... (such as \"cmd:gh auth token\")";
  if (text.starts_with("env:")) {
    if (variable_name(text.substr(4))) return ok_status();
    return failed(expect + ", with a variable name after env:");
  }
  if (text.starts_with("file:")) {
    if (text.size() > 5) return ok_status();
    return failed(expect + ", with a path after file:");
  }
  if (text.starts_with("cmd:")) {
    std::string_view argv = text.substr(4);
    if (std::any_of(argv.begin(), argv.end(),
                    [](char c) { return std::isspace(static_cast<unsigned char>(c)) == 0; })) {
      return ok_status();
    }
    return failed(expect + ", with a program after cmd:");
  }
  return failed(expect);
}

bool valid_route_method(std::string_view method) {
  return !method.empty() && method.size() <= 32 &&
         std::all_of(method.begin(), method.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

bool valid_route_path(std::string_view path) { return !net::path_refusal(path, true).has_value(); }

bool valid_ssh_route_host(std::string_view host) {
  if (host.empty() || host.size() > 253 || host.front() == '.' || host.front() == '-' || host.back() == '.') {
    return false;
  }
  return std::all_of(host.begin(), host.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.'; });
}

}  // namespace tnk
