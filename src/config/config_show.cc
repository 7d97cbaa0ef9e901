#include "config/config_show.h"

#include <string>
#include <string_view>
#include <utility>

#include "config/keys.h"

namespace tnk {
namespace {

std::string source_text(const config::ShownValue& shown, std::string_view env) {
  switch (shown.source) {
    case Source::kDefault: return "(default)";
    case Source::kFile: return "(file, line " + std::to_string(shown.line) + ")";
    case Source::kEnv: return "(env " + std::string(env) + ")";
  }
  return "(default)";
}

std::string padded(std::string text, size_t width) {
  text.append(text.size() < width ? width - text.size() : 1, ' ');
  return text;
}

// A route as `config show` lists it: where it goes and where its credential comes from, never the
// credential (which is not read here) nor the header's value.
nlohmann::json route_json(const RouteSetting& route) {
  return {{"name", route.name},
          {"upstream", net::upstream_url(route.host, route.port)},
          {"header", route.header.name},
          {"source", route.source},
          {"methods", route.methods},
          {"paths", route.paths},
          {"ca_file", route.ca_file.string()},
          {"line", route.line}};
}

std::string route_text(const RouteSetting& route) {
  std::string rules;
  for (const auto* list : {&route.methods, &route.paths}) {
    for (const std::string& item : *list) rules += " " + item;
  }
  return padded("routes." + route.name, 26) + padded(net::upstream_url(route.host, route.port), 16) + "(file, line " +
         std::to_string(route.line) + ") header " + route.header.name + " from " + route.source +
         (rules.empty() ? "" : ", only" + rules) + "\n";
}

}  // namespace

nlohmann::json config_to_json(const Config& config) {
  nlohmann::json settings = nlohmann::json::object();
  for (const config::Key& key : config::keys()) {
    config::ShownValue shown = key.show(config);
    nlohmann::json entry = {{"value", std::move(shown.value)}, {"source", to_string(shown.source)}};
    if (!shown.path.empty()) entry["path"] = shown.path;
    if (shown.source == Source::kFile) entry["line"] = shown.line;
    if (shown.source == Source::kEnv) entry["env"] = std::string(key.env);
    settings[std::string(key.name)] = std::move(entry);
  }
  nlohmann::json routes = nlohmann::json::array();
  for (const RouteSetting& route : config.routes) routes.push_back(route_json(route));
  return {{"file", config.file.string()},
          {"file_exists", config.file_exists},
          {"settings", std::move(settings)},
          {"routes", std::move(routes)}};
}

std::string config_show_text(const Config& config) {
  std::string out = padded("file", 26) + config.file.string() + (config.file_exists ? "" : " (not found)") + "\n";
  for (const config::Key& key : config::keys()) {
    config::ShownValue shown = key.show(config);
    out += padded(std::string(key.name), 26) + padded(shown.text, 16) + source_text(shown, key.env) + "\n";
  }
  for (const RouteSetting& route : config.routes) out += route_text(route);
  return out;
}

}  // namespace tnk
