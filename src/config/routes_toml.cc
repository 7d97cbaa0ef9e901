#include "config/routes_toml.h"

#include <algorithm>

#include "workspace/workspace.h"

namespace tnk::config {
namespace {

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

}  // namespace

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
