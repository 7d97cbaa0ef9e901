// Value checks for manifest fields: domain names, mount paths. Pure functions. (Sizes: config/size.h.)
#include <algorithm>
#include <array>
#include <cctype>

#include "specs/manifest.h"

namespace tnk::specs {
namespace {

bool has_control_char(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return std::iscntrl(static_cast<unsigned char>(c)) != 0; });
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

bool valid_label(std::string_view label) {
  if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
  return std::all_of(label.begin(), label.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

}  // namespace

Status validate_domain(std::string_view domain) {
  auto bad = [&](const std::string& why) {
    return failed("invalid domain '" + std::string(domain) + "': " + why,
                  "write domains in lowercase, like example.com, *.example.com or example.com:8443");
  };
  // A registry by its client's name: the host its own client is configured for, resolved when the
  // policy is applied, so specs never hard-code a mirror.
  for (std::string_view registry : kRegistryNames) {
    if (domain == registry) return ok_status();
  }
  if (domain.starts_with("@")) return bad("unknown registry; use @debian (the apt mirror) or @npm (npm's registry)");
  std::string_view name = domain;
  if (size_t colon = name.rfind(':'); colon != std::string_view::npos) {  // an optional port: example.com:8443
    std::string_view port = name.substr(colon + 1);
    bool digits = !port.empty() && port.size() <= 5 &&
                  std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoul(std::string(port)) < 1 || std::stoul(std::string(port)) > 65535) {
      return bad("the port after ':' must be a number from 1 to 65535");
    }
    name = name.substr(0, colon);
  }
  if (name.starts_with("*.")) name.remove_prefix(2);
  if (name.empty() || name.size() > 253) return bad("it must have 1 to 253 characters");
  if (lower(name) != name) return bad("it must be lowercase");
  std::vector<std::string_view> labels = split(name, '.');
  if (labels.size() < 2) return bad("it needs at least two labels (example.com)");
  for (std::string_view label : labels) {
    if (!valid_label(label)) return bad("'" + std::string(label) + "' is not a valid label (a-z, 0-9, inner '-')");
  }
  const std::string_view tld = labels.back();
  if (std::all_of(tld.begin(), tld.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return bad("use a domain name, not an IP address");
  }
  return ok_status();
}

Status validate_workspace_mount(std::string_view path) {
  auto bad = [&](const std::string& why) {
    return failed("invalid workspace mount '" + std::string(path) + "': " + why,
                  "use an absolute path such as /workspace");
  };
  if (path.empty() || path.front() != '/') return bad("it must be an absolute path");
  if (path.size() > 1024) return bad("it is longer than 1024 characters");
  if (has_control_char(path)) return bad("it contains a control character");
  if (path == "/") return bad("it cannot be the root directory");
  if (path.back() == '/') return bad("it must not end with '/'");
  std::vector<std::string_view> parts = split(path.substr(1), '/');
  for (std::string_view part : parts) {
    if (part.empty() || part == "." || part == "..") return bad("it must not contain '.', '..' or '//'");
  }
  static constexpr std::array<std::string_view, 13> kSystem = {"bin",    "boot", "dev", "etc",  "lib", "lib32", "lib64",
                                                               "libx32", "proc", "run", "sbin", "sys", "usr"};
  static constexpr std::array<std::string_view, 6> kTopOnly = {"home", "root", "tmp", "var", "opt", "srv"};
  const std::string_view top = parts.front();
  if (std::find(kSystem.begin(), kSystem.end(), top) != kSystem.end()) {
    return bad("it is inside the system directory /" + std::string(top));
  }
  if (parts.size() == 1 && std::find(kTopOnly.begin(), kTopOnly.end(), top) != kTopOnly.end()) {
    return bad("it would hide the sandbox's /" + std::string(top));
  }
  return ok_status();
}

Result<std::string> normalize_readonly_path(std::string_view path) {
  auto bad = [&](const std::string& why) {
    return failed("invalid read-only path '" + std::string(path) + "': " + why,
                  "list paths relative to the project, such as .git/hooks");
  };
  if (path.empty()) return bad("it is empty");
  if (path.front() == '/') return bad("it must be relative to the project, not absolute");
  if (path.size() > 1024) return bad("it is longer than 1024 characters");
  if (has_control_char(path)) return bad("it contains a control character");
  std::string normal;
  for (std::string_view part : split(path, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") return bad("it must not contain '..'");
    normal += (normal.empty() ? "" : "/") + std::string(part);
  }
  if (normal.empty()) return bad("it names the whole project");
  return normal;
}

}  // namespace tnk::specs
