#include "config/config_show.h"

#include <vector>

#include "config/config_keys.h"
#include "config/size.h"

namespace tnk {
namespace {

struct ShowRow {
  std::string key;
  std::string text;      // for config_show_text
  nlohmann::json value;  // for config_to_json
  std::string path;      // expanded path for path keys, else empty
  Source source = Source::kDefault;
  int line = 0;
};

template <class T>
ShowRow row(std::string key, const Setting<T>& setting, std::string text, nlohmann::json value) {
  return ShowRow{std::move(key), std::move(text), std::move(value), {}, setting.source, setting.line};
}

ShowRow path_row(std::string key, const Setting<std::string>& setting, const std::filesystem::path& path) {
  ShowRow r = row(std::move(key), setting, path.string(), setting.value);
  r.path = path.string();
  return r;
}

ShowRow text_row(std::string key, const Setting<std::string>& setting) {
  return row(std::move(key), setting, setting.value, setting.value);
}

template <class T>
ShowRow optional_row(std::string key, const Setting<std::optional<T>>& setting) {
  if (!setting.value) return row(std::move(key), setting, "<none>", nullptr);
  if constexpr (std::is_same_v<T, std::string>)
    return row(std::move(key), setting, *setting.value, *setting.value);
  else
    return row(std::move(key), setting, std::to_string(*setting.value), *setting.value);
}

template <class T>
ShowRow size_row(std::string key, const Setting<T>& setting) {
  return row(std::move(key), setting, format_size(setting.value), setting.value);
}

// [inference.aliases] as "name=model, ..." and as a JSON object.
ShowRow aliases_row(const Config& c) {
  std::string text;
  for (const auto& [alias, model] : c.inference_aliases.value) {
    text += (text.empty() ? "" : ", ") + alias + "=" + model;
  }
  nlohmann::json value(c.inference_aliases.value);
  return row("inference.aliases", c.inference_aliases, text.empty() ? "<none>" : text, value);
}

std::vector<ShowRow> show_rows(const Config& c) {
  return {
      row("server_port", c.server_port, std::to_string(c.server_port.value), c.server_port.value),
      path_row("workspace_root", c.workspace_root, c.workspace_root_path),
      path_row("model_dir", c.model_dir, c.model_dir_path),
      text_row("default_provision_profile", c.default_provision_profile),
      text_row("default_engine_runtime", c.default_engine_runtime),
      optional_row("default_engine_preset", c.default_engine_preset),
      text_row("default_engine_bind_host", c.default_engine_bind_host),
      text_row("default_backend", c.default_backend),
      optional_row("inference_url", c.inference_url),
      optional_row("model_name", c.model_name),
      optional_row("context_window", c.context_window),
      row("default_network", c.default_network, to_string(c.default_network.value), to_string(c.default_network.value)),
      row("allow_unlimited", c.allow_unlimited, c.allow_unlimited.value ? "true" : "false", c.allow_unlimited.value),
      row("sandbox.cpus", c.sandbox_cpus, std::to_string(c.sandbox_cpus.value), c.sandbox_cpus.value),
      size_row("sandbox.memory", c.sandbox_memory_bytes),
      size_row("sandbox.disk", c.sandbox_disk_bytes),
      row("audit", c.audit, c.audit.value ? "true" : "false", c.audit.value),
      path_row("audit_dir", c.audit_dir, c.audit_dir_path),
      // Where the key comes from, never the key: Config does not hold it (config/api_key.h).
      optional_row("inference.api_key_env", c.inference_api_key_env),
      optional_row("inference.api_key_file", c.inference_api_key_file),
      row("inference.concurrency", c.inference_concurrency, std::to_string(c.inference_concurrency.value),
          c.inference_concurrency.value),
      size_row("inference.request_limit", c.inference_request_limit),
      size_row("inference.answer_limit", c.inference_answer_limit),
      aliases_row(c),
  };
}

std::string env_var(std::string_view key) {
  const auto* info = config::find_config_key(key);
  return info != nullptr ? std::string(info->env) : std::string();
}

std::string source_text(const ShowRow& r) {
  switch (r.source) {
    case Source::kDefault: return "(default)";
    case Source::kFile: return "(file, line " + std::to_string(r.line) + ")";
    case Source::kEnv: return "(env " + env_var(r.key) + ")";
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
  for (const ShowRow& r : show_rows(config)) {
    nlohmann::json entry = {{"value", r.value}, {"source", to_string(r.source)}};
    if (!r.path.empty()) entry["path"] = r.path;
    if (r.source == Source::kFile) entry["line"] = r.line;
    if (r.source == Source::kEnv) entry["env"] = env_var(r.key);
    settings[r.key] = std::move(entry);
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
  for (const ShowRow& r : show_rows(config)) {
    out += padded(r.key, 26) + padded(r.text, 16) + source_text(r) + "\n";
  }
  for (const RouteSetting& route : config.routes) out += route_text(route);
  return out;
}

}  // namespace tnk
