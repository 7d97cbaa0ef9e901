#include "config/routes_toml.h"

#include <algorithm>
#include <cctype>

#include "net/ssh_wire.h"
#include "workspace/workspace.h"

namespace tnk::config {
namespace {

using net::parse_public_key_line;
using net::ssh_blob_type;

// One [[routes]] table read into a RouteSetting; the first wrong key is the error.
class RouteTable {
 public:
  RouteTable(const toml::table& table, const std::filesystem::path& home, const TomlNodeError& error)
      : table_(table), home_(home), error_(error) {}

  Result<RouteSetting> read() {
    RouteSetting route;
    route.line = static_cast<int>(table_.source().begin.line);
    for (auto&& [key, node] : table_) {
      std::string name(key.str());
      if (name == "name" || name == "upstream" || name == "header" || name == "source" || name == "ca_file") continue;
      if (name == "methods" || name == "paths") continue;
      return error_(node, "unknown key 'routes." + name + "' (a route has " + std::string(kRouteKeys) + ")");
    }
    TNK_ASSIGN_OR_RETURN(route.name, text("name", "letters, digits and '-', such as \"github\""));
    if (!net::valid_route_name(route.name)) {
      return wrong("name", "letters, digits and '-' (at most 63, not starting with '-'), such as \"github\"");
    }
    TNK_ASSIGN_OR_RETURN(std::string upstream, text("upstream", "an https:// URL such as \"https://github.com\""));
    auto parsed = parse_route_upstream(upstream);
    if (!parsed) return wrong("upstream", parsed.error().message);
    std::tie(route.host, route.port) = *parsed;
    TNK_ASSIGN_OR_RETURN(std::string header, text("header", "\"Authorization: Bearer {credential}\""));
    auto templated = net::parse_header_template(header);
    if (!templated)
      return wrong("header", "\"Name: value\" with {credential} or {basic:USER}: " + templated.error().message);
    route.header = *templated;
    TNK_ASSIGN_OR_RETURN(route.source, text("source", "env:NAME, file:PATH or cmd:PROGRAM ARG..."));
    if (Status checked = check_route_source(route.source); !checked) return wrong("source", checked.error().message);
    TNK_ASSIGN_OR_RETURN(
        route.methods,
        list("methods", "a list of upper-case HTTP methods, such as [\"GET\", \"POST\"]", valid_route_method));
    TNK_ASSIGN_OR_RETURN(
        route.paths, list("paths", "a list of path prefixes starting with '/', such as [\"/me/\"]", valid_route_path));
    if (table_.contains("ca_file")) {
      TNK_ASSIGN_OR_RETURN(std::string ca, text("ca_file", "the path of a PEM file of CA certificates"));
      route.ca_file = workspace::expand_user_path(ca, home_);
      if (!route.ca_file.is_absolute()) return wrong("ca_file", "an absolute path (~ and $HOME are expanded)");
    }
    return route;
  }

 private:
  Error wrong(const char* key, const std::string& expect) const {
    const toml::node* node = table_.get(key);
    return error_(node != nullptr ? *node : static_cast<const toml::node&>(table_),
                  "key 'routes." + std::string(key) + "' must be " + expect);
  }

  Result<std::string> text(const char* key, const std::string& example) const {
    const toml::node* node = table_.get(key);
    if (node == nullptr) {
      return error_(table_, "a route needs the key '" + std::string(key) + "' (for example " + example + ")");
    }
    const auto* value = node->as_string();
    if (value == nullptr || value->get().empty()) return wrong(key, "a non-empty string, such as " + example);
    return value->get();
  }

  Result<std::vector<std::string>> list(const char* key, const std::string& expect,
                                        bool (*valid)(std::string_view)) const {
    std::vector<std::string> out;
    const toml::node* node = table_.get(key);
    if (node == nullptr) return out;
    const auto* array = node->as_array();
    if (array == nullptr) return wrong(key, expect);
    for (const toml::node& item : *array) {
      const auto* value = item.as_string();
      if (value == nullptr || !valid(value->get())) return wrong(key, expect);
      out.push_back(value->get());
    }
    return out;
  }

  const toml::table& table_;
  const std::filesystem::path& home_;
  const TomlNodeError& error_;
};

// One [[ssh_routes]] table: host, port (22), host_key and identities, public keys as .pub files write them.
Result<net::SshRoute> read_ssh_route(const toml::table& table, const TomlNodeError& error) {
  auto wrong = [&](const char* key, const std::string& expect) {
    const toml::node* node = table.get(key);
    return error(node != nullptr ? *node : static_cast<const toml::node&>(table),
                 "key 'ssh_routes." + std::string(key) + "' must be " + expect);
  };
  for (auto&& [key, node] : table) {
    std::string name(key.str());
    if (name != "host" && name != "port" && name != "host_key" && name != "identities") {
      return error(node, "unknown key 'ssh_routes." + name + "' (an SSH route has " + std::string(kSshRouteKeys) + ")");
    }
  }
  net::SshRoute route;
  auto host = table["host"].value<std::string>();
  if (!host || !valid_ssh_route_host(*host))
    return wrong("host", "a host name or IPv4 address, such as \"github.com\"");
  route.host = *host;
  std::transform(route.host.begin(), route.host.end(), route.host.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (table.contains("port")) {
    auto port = table["port"].value<int64_t>();
    if (!port || *port < 1 || *port > 65535) return wrong("port", "a port number (1-65535)");
    route.port = static_cast<uint16_t>(*port);
  }
  const std::string key_text = "a public key as a .pub file holds it (\"ssh-ed25519 AAAA...\"): ";
  auto host_key = table["host_key"].value<std::string>();
  if (!host_key) return wrong("host_key", key_text + "the server's host key is needed");
  auto host_blob = parse_public_key_line(*host_key);
  if (!host_blob) return wrong("host_key", key_text + host_blob.error().message);
  if (ssh_blob_type(*host_blob) != "ssh-ed25519")
    return wrong("host_key", "an ssh-ed25519 host key (the only type checked)");
  route.host_key = *host_blob;
  const toml::array* identities = table["identities"].as_array();
  if (identities == nullptr || identities->empty())
    return wrong("identities", "a non-empty list of " + key_text.substr(2));
  for (const toml::node& item : *identities) {
    auto text = item.value<std::string>();
    auto blob = text ? parse_public_key_line(*text) : Result<std::string>(failed("a string"));
    if (!blob) return wrong("identities", "a list of " + key_text.substr(2) + blob.error().message);
    route.identities.push_back(*blob);
  }
  return route;
}

}  // namespace

Status apply_ssh_routes(const toml::node& node, Config& config, const TomlNodeError& error) {
  const std::string expect = "key 'ssh_routes' must be an array of tables: [[ssh_routes]] sections";
  const auto* array = node.as_array();
  if (array == nullptr) return error(node, expect);
  for (const toml::node& item : *array) {
    const auto* table = item.as_table();
    if (table == nullptr) return error(item, expect);
    TNK_ASSIGN_OR_RETURN(net::SshRoute route, read_ssh_route(*table, error));
    for (const net::SshRoute& other : config.ssh_routes) {
      if (other.host == route.host && other.port == route.port) {
        return error(*table, "the SSH route " + net::ssh_route_target(route) + " is listed twice");
      }
    }
    config.ssh_routes.push_back(std::move(route));
  }
  return ok_status();
}

Status apply_routes(const toml::node& node, Config& config, const std::filesystem::path& home,
                    const TomlNodeError& error) {
  const std::string expect = "key 'routes' must be an array of tables: [[routes]] sections";
  const auto* array = node.as_array();
  if (array == nullptr) return error(node, expect);
  for (const toml::node& item : *array) {
    const auto* table = item.as_table();
    if (table == nullptr) return error(item, expect);
    TNK_ASSIGN_OR_RETURN(RouteSetting route, RouteTable(*table, home, error).read());
    for (const RouteSetting& other : config.routes) {
      if (other.name == route.name) {
        return error(*table, "the route name '" + route.name + "' is used twice (also on line " +
                                 std::to_string(other.line) + ")");
      }
    }
    config.routes.push_back(std::move(route));
  }
  return ok_status();
}

}  // namespace tnk::config
