#include "config/config_values.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "config/size.h"
#include "naming/backend_kind.h"
#include "workspace/workspace.h"

namespace tnk::config {
namespace {

bool is_printable(std::string_view text) {
  return std::none_of(text.begin(), text.end(),
                      [](char c) { return std::iscntrl(static_cast<unsigned char>(c)) != 0; });
}

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-'; }

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::optional<uint64_t> parse_uint(std::string_view text, uint64_t min, uint64_t max) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) return std::nullopt;
    auto digit = static_cast<uint64_t>(c - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  if (value < min || value > max) return std::nullopt;
  return value;
}

std::optional<uint16_t> parse_port(std::string_view text) {
  auto value = parse_uint(text, 1, 65535);
  if (!value) return std::nullopt;
  return static_cast<uint16_t>(*value);
}

std::optional<std::string> parse_path_text(std::string_view text) {
  if (text.empty() || !is_printable(text)) return std::nullopt;
  return std::string(text);
}

std::optional<std::string> parse_absolute_dir(std::string_view text, const std::filesystem::path& home) {
  auto path = parse_path_text(text);
  if (!path || !workspace::expand_user_path(*path, home).is_absolute()) return std::nullopt;
  return path;
}

std::optional<std::string> parse_runtime_name(std::string_view text) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), is_name_char)) return std::nullopt;
  return std::string(text);
}

std::optional<std::string> parse_profile_name(std::string_view text) {
  if (text.empty() || text.front() == '.' || text.front() == '-') return std::nullopt;
  if (!std::all_of(text.begin(), text.end(), [](char c) { return is_name_char(c) || c == '.'; })) {
    return std::nullopt;
  }
  return std::string(text);
}

std::optional<std::string> parse_bind_host(std::string_view text) {
  auto ok = [](char c) { return is_name_char(c) || c == '.' || c == ':' || c == '%'; };
  if (text.empty() || !std::all_of(text.begin(), text.end(), ok)) return std::nullopt;
  return std::string(text);
}

std::optional<std::string> parse_backend_name(std::string_view text) {
  if (!parse_backend_kind(text)) return std::nullopt;
  return std::string(text);
}

std::optional<std::string> parse_inference_url(std::string_view text) {
  if (!split_url(text)) return std::nullopt;
  return std::string(text);
}

std::optional<std::string> parse_model_name(std::string_view text) {
  if (text.empty() || !is_printable(text)) return std::nullopt;
  return std::string(text);
}

std::optional<NetworkPolicy> parse_network(std::string_view text) { return parse_network_policy(text); }

std::optional<std::string> parse_k8s_label(std::string_view text) {
  auto ok = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; };
  if (text.empty() || text.size() > 63 || !std::all_of(text.begin(), text.end(), ok)) return std::nullopt;
  if (text.front() == '-' || text.back() == '-') return std::nullopt;
  return std::string(text);
}

std::optional<std::string> parse_k8s_subdomain(std::string_view text) {
  if (text.empty() || text.size() > 253) return std::nullopt;
  for (size_t start = 0; start <= text.size();) {
    size_t dot = std::min(text.find('.', start), text.size());
    if (!parse_k8s_label(text.substr(start, dot - start))) return std::nullopt;
    start = dot + 1;
  }
  return std::string(text);
}

std::optional<std::string> parse_image_registry(std::string_view text) {
  auto ok = [](char c) { return is_name_char(c) || c == '.' || c == ':' || c == '/'; };
  if (text.empty() || text.find("://") != std::string_view::npos || text.front() == '/' || text.back() == '/' ||
      !std::all_of(text.begin(), text.end(), ok)) {
    return std::nullopt;
  }
  return std::string(text);
}

std::optional<std::string> parse_env_name(std::string_view text) {
  auto ok = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text.front())) != 0) return std::nullopt;
  if (!std::all_of(text.begin(), text.end(), ok)) return std::nullopt;
  return std::string(text);
}

std::optional<bool> parse_bool_text(std::string_view text) {
  std::string value = lower(text);
  if (value == "1" || value == "true") return true;
  if (value == "0" || value == "false") return false;
  return std::nullopt;
}

std::optional<uint64_t> parse_size_text(std::string_view text) {
  auto size = parse_size(text);
  if (!size.ok() || *size == 0) return std::nullopt;
  return *size;
}

std::optional<UrlParts> split_url(std::string_view text) {
  if (!is_printable(text) || text.find(' ') != std::string_view::npos) return std::nullopt;
  auto scheme_end = text.find("://");
  if (scheme_end == std::string_view::npos) return std::nullopt;
  UrlParts url;
  url.scheme = lower(text.substr(0, scheme_end));
  if (url.scheme != "http" && url.scheme != "https") return std::nullopt;
  std::string_view rest = text.substr(scheme_end + 3);
  size_t authority_end = std::min(rest.find_first_of("/?#"), rest.size());
  std::string_view authority = rest.substr(0, authority_end);
  url.rest = std::string(rest.substr(authority_end));
  if (auto at = authority.rfind('@'); at != std::string_view::npos) {
    url.userinfo = std::string(authority.substr(0, at));
    authority.remove_prefix(at + 1);
  }
  std::string_view host = authority;
  std::optional<std::string_view> port;  // set when the authority has a ':' after the host
  if (authority.starts_with('[')) {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && !after.starts_with(':')) return std::nullopt;
    if (!after.empty()) port = after.substr(1);
  } else if (auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty() || !parse_bind_host(host)) return std::nullopt;
  if (port && !parse_port(*port)) return std::nullopt;
  url.host = std::string(host);
  url.port = std::string(port.value_or(""));
  return url;
}

std::string url_host(std::string_view host) {
  if (host.find(':') != std::string_view::npos) return "[" + std::string(host) + "]";
  return std::string(host);
}

std::string printable(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (std::iscntrl(static_cast<unsigned char>(c)) != 0) c = '?';
  }
  return out;
}

}  // namespace tnk::config
