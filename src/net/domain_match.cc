#include "net/domain_match.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cctype>
#include <optional>

#include "net/port.h"

namespace tnk::net {
namespace {

struct Entry {
  bool wildcard = false;
  std::string name;   // lowercased, no trailing dot, no "*." and no brackets
  uint16_t port = 0;  // 0: the default ports 80 and 443
};

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A host name or IP literal: letters, digits, '-', '_', '.', ':' (IPv6), with no empty label.
bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 253 || name.front() == '.' || name.find("..") != std::string_view::npos) {
    return false;
  }
  for (char c : name) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.' || c == ':';
    if (!ok) return false;
  }
  return true;
}

// Lowercase without the trailing dot; IPv6 literals in their canonical text ("2001:db8::1").
std::string normalize_host(std::string_view host) {
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  std::string out = lower(host);
  in6_addr v6;
  char text[INET6_ADDRSTRLEN] = {};
  if (out.find(':') != std::string::npos && ::inet_pton(AF_INET6, out.c_str(), &v6) == 1 &&
      ::inet_ntop(AF_INET6, &v6, text, sizeof text) != nullptr) {
    out = text;
  }
  return out;
}

// Splits "name[:port]" or "[v6][:port]"; nullopt when the entry is not one of the accepted forms.
std::optional<Entry> parse_entry(std::string_view text) {
  Entry entry;
  std::string_view name = text;
  std::string_view port;
  if (text.starts_with('[')) {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    name = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || rest.size() == 1)) return std::nullopt;
    if (!rest.empty()) port = rest.substr(1);
  } else if (size_t colon = text.find(':'); colon != std::string_view::npos) {
    name = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (port.empty()) return std::nullopt;
  }
  if (!port.empty()) {
    auto value = parse_port(port);
    if (!value) return std::nullopt;
    entry.port = *value;
  }
  if (name.starts_with("*.")) {
    entry.wildcard = true;
    name.remove_prefix(2);
  }
  entry.name = normalize_host(name);
  if (!valid_name(entry.name)) return std::nullopt;
  if (!text.starts_with('[') && entry.name.find(':') != std::string::npos) return std::nullopt;
  return entry;
}

bool name_matches(const Entry& entry, const std::string& host) {
  if (!entry.wildcard) return host == entry.name;
  return host.size() > entry.name.size() + 1 && host.ends_with(entry.name) &&
         host[host.size() - entry.name.size() - 1] == '.';
}

bool port_matches(const Entry& entry, uint16_t port) {
  return entry.port == 0 ? (port == 80 || port == 443) : port == entry.port;
}

}  // namespace

bool domain_allowed(const std::vector<std::string>& allow, std::string_view host, uint16_t port, std::string* rule) {
  std::string wanted = normalize_host(host);
  if (!valid_name(wanted)) return false;
  for (const std::string& text : allow) {
    auto entry = parse_entry(text);
    if (entry && name_matches(*entry, wanted) && port_matches(*entry, port)) {
      if (rule != nullptr) *rule = text;
      return true;
    }
  }
  return false;
}

bool host_listed(const std::vector<std::string>& allow, std::string_view host) {
  std::string wanted = normalize_host(host);
  if (!valid_name(wanted)) return false;
  for (const std::string& text : allow) {
    auto entry = parse_entry(text);
    if (entry && name_matches(*entry, wanted)) return true;
  }
  return false;
}

bool domain_denied(const std::vector<std::string>& deny, std::string_view host, uint16_t port, std::string* rule) {
  std::string wanted = normalize_host(host);
  if (!valid_name(wanted)) return false;
  for (const std::string& text : deny) {
    auto entry = parse_entry(text);
    if (entry && name_matches(*entry, wanted) && (entry->port == 0 || entry->port == port)) {
      if (rule != nullptr) *rule = text;
      return true;
    }
  }
  return false;
}

std::string enforcement_text(std::string_view text, bool deny) {
  auto entry = parse_entry(text);
  if (!entry) return "not enforceable: not an allow-list entry";
  in6_addr buffer;
  bool address = ::inet_pton(AF_INET, entry->name.c_str(), &buffer) == 1 ||
                 ::inet_pton(AF_INET6, entry->name.c_str(), &buffer) == 1;
  std::string what = entry->wildcard ? "subdomains of " + entry->name : (address ? "address " : "name ") + entry->name;
  if (entry->port != 0) return what + ", port " + std::to_string(entry->port);
  return what + (deny ? ", every port" : ", ports 80 and 443");
}

Status check_allow_entry(std::string_view entry) {
  if (parse_entry(entry)) return ok_status();
  return usage_error("invalid allow-list entry \"" + std::string(entry) + "\"",
                     "use a name (example.org), a wildcard for its subdomains (*.example.org) or an IP literal, "
                     "optionally with :port (without a port only 80 and 443 are allowed)");
}

}  // namespace tnk::net
