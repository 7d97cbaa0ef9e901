#include "config/config.h"

#include <cerrno>

#include "config/config_env.h"
#include "config/config_file.h"
#include "config/config_values.h"
#include "config/keys.h"
#include "core/trusted_file.h"

namespace tnk {
namespace {

// Fills the expanded path of each path key (workspace_root_path, ...) from its text.
void resolve_paths(Config& config, const Paths& paths) {
  for (const config::Key& key : config::keys()) {
    if (key.expand) key.expand(config, paths.home);
  }
}

}  // namespace

std::string to_string(Source source) {
  switch (source) {
    case Source::kDefault: return "default";
    case Source::kFile: return "file";
    case Source::kEnv: return "env";
  }
  return "default";
}

Config default_config(const Paths& paths) {
  Config config;
  config.file = paths.config_file();
  config.audit_dir.value = paths.default_audit_dir().string();
  resolve_paths(config, paths);
  return config;
}

Result<Config> load_config(const Paths& paths, const Env& env, Log& log) {
  Config config = default_config(paths);
  auto text = read_trusted_file(config.file, "configuration");
  if (text.ok()) {
    config.file_exists = true;
    TNK_RETURN_IF_ERROR(config::apply_config_file(*text, config, paths, log));
  } else if (text.error().sys_errno == ENOENT) {
    log.info("using default settings (run `tnk config init` to create " + config.file.string() + ")");
  } else {
    if (!text.error().hint.empty()) return text.error();
    return text.error().with_hint("make " + config.file.string() + " a readable file, or move it away");
  }
  config::apply_config_env(config, env, paths, log);
  resolve_paths(config, paths);
  return config;
}

std::string host_inference_url(const Config& config) {
  if (config.inference_url.value) return *config.inference_url.value;
  std::string host = config.default_engine_bind_host.value;
  // A wildcard bind address is not a destination: connect through loopback.
  if (host.empty() || host == "0.0.0.0" || host == "::") host = "127.0.0.1";
  return "http://" + config::url_host(host) + ":" + std::to_string(config.server_port.value) + "/v1";
}

std::string guest_inference_url(const Config& config, std::string_view host_alias) {
  std::string alias = config::url_host(host_alias);
  if (config.inference_url.value) {
    if (auto url = config::split_url(*config.inference_url.value)) {
      std::string port = !url->port.empty() ? url->port : (url->scheme == "https" ? "443" : "80");
      std::string userinfo = url->userinfo.empty() ? "" : url->userinfo + "@";
      return url->scheme + "://" + userinfo + alias + ":" + port + url->rest;
    }
  }
  return "http://" + alias + ":" + std::to_string(config.server_port.value) + "/v1";
}

}  // namespace tnk
