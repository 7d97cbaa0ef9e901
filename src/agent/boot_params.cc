#include "agent/boot_params.h"

#include <arpa/inet.h>

#include <fstream>
#include <sstream>
#include <system_error>

namespace tnk::agent {
namespace {

bool valid_value(std::string_view v) {
  for (char c : v) {
    if (c == '\0' || c == '\n') return false;
  }
  return true;
}

}  // namespace

Result<BootParams> parse_boot_params(std::string_view cmdline) {
  BootParams params;
  std::string text(cmdline);
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    if (word.rfind("tnk.", 0) != 0) continue;
    auto eq = word.find('=');
    if (eq == std::string::npos) continue;
    std::string key = word.substr(4, eq - 4), value = word.substr(eq + 1);
    if (!valid_value(value)) return failed("kernel command line: bad value for tnk." + key);
    if (key == "token")
      params.token = value;
    else if (key == "port")
      params.port = value;
    else if (key == "mount")
      params.mount = value;
    else if (key == "gitdir")
      params.git_dir = value;
    else if (key == "host")
      params.host = value;
    else if (key == "hostname")
      params.hostname = value;
    else if (key == "ip")
      params.ip = value;
    else if (key == "root")
      params.root = value;
  }
  if (params.token.empty()) {
    return failed("kernel command line: tnk.token= is missing", "the host passes the agent's token at boot");
  }
  for (const auto& [key, path] :
       {std::pair{"mount", &params.mount}, std::pair{"gitdir", &params.git_dir}, std::pair{"root", &params.root}}) {
    if (!path->empty() && path->front() != '/') {
      return failed(std::string("kernel command line: tnk.") + key + "=" + *path + " is not an absolute path");
    }
  }
  in_addr addr{};
  if (::inet_pton(AF_INET, params.host.c_str(), &addr) != 1) {
    return failed("kernel command line: tnk.host=" + params.host + " is not an IPv4 address");
  }
  if (!params.ip.empty()) {
    TNK_RETURN_IF_ERROR(parse_ipv4_prefix(params.ip));
  }
  return params;
}

std::string boot_cmdline(const BootParams& params) {
  std::string out = "tnk.token=" + params.token + " tnk.port=" + params.port + " tnk.host=" + params.host;
  if (!params.mount.empty()) out += " tnk.mount=" + params.mount;
  if (!params.git_dir.empty()) out += " tnk.gitdir=" + params.git_dir;
  if (!params.hostname.empty()) out += " tnk.hostname=" + params.hostname;
  if (!params.ip.empty()) out += " tnk.ip=" + params.ip;
  if (!params.root.empty()) out += " tnk.root=" + params.root;
  return out;
}

std::string hosts_file(const BootParams& params) {
  std::string out = "127.0.0.1\tlocalhost\n";
  if (!params.hostname.empty()) out += "127.0.1.1\t" + params.hostname + "\n";
  out += "::1\tlocalhost ip6-localhost ip6-loopback\n";
  out += params.host + "\thost.lima.internal host.tnk.internal\n";
  return out;
}

std::optional<std::filesystem::path> find_virtio_port(const std::filesystem::path& sysfs_dir, std::string_view name) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(sysfs_dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::ifstream in(it->path() / "name");
    std::string line;
    if (!std::getline(in, line)) continue;
    if (line == name) return std::filesystem::path("/dev") / it->path().filename();
  }
  return std::nullopt;
}

Result<Ipv4Prefix> parse_ipv4_prefix(std::string_view text) {
  std::string s(text);
  auto slash = s.find('/');
  Error bad = failed("'" + s + "' is not an IPv4 address with a prefix length (A.B.C.D/N)");
  if (slash == std::string::npos || slash + 1 >= s.size() || s.size() - slash > 3) return bad;
  if (s.find('\0') != std::string::npos) return bad;  // inet_pton would stop at it
  in_addr addr{};
  if (::inet_pton(AF_INET, s.substr(0, slash).c_str(), &addr) != 1) return bad;
  int prefix = 0;
  for (char c : s.substr(slash + 1)) {
    if (c < '0' || c > '9') return bad;
    prefix = prefix * 10 + (c - '0');
  }
  if (prefix < 1 || prefix > 32) return bad;
  return Ipv4Prefix{ntohl(addr.s_addr), prefix};
}

}  // namespace tnk::agent
