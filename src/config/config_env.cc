#include "config/config_env.h"

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "config/config_keys.h"
#include "config/config_values.h"

namespace tnk::config {
namespace {
namespace fs = std::filesystem;

// Sets one Config field from a variable's text; false when the text is not acceptable.
using TextApply = std::function<bool(std::string_view text, Config&, const fs::path& home)>;

template <class T, class Parse>
TextApply text_key(Setting<T> Config::*member, Parse parse) {
  return [member, parse](std::string_view text, Config& config, const fs::path& home) {
    auto value = parse(text, home);
    if (!value) return false;
    config.*member = Setting<T>{T(std::move(*value)), Source::kEnv, 0};
    return true;
  };
}

// Most validators do not need HOME.
template <class TextParse>
auto plain(TextParse text_parse) {
  return [text_parse](std::string_view text, const fs::path&) { return text_parse(text); };
}

std::optional<uint64_t> context_window_text(std::string_view text) {
  return parse_uint(text, 1, std::numeric_limits<int64_t>::max());
}

struct EnvKey {
  std::string_view key;  // the tnk.toml key; its variable comes from kConfigKeys
  TextApply apply;
};

const std::vector<EnvKey>& env_keys() {
  static const std::vector<EnvKey> keys = {
      {"server_port", text_key(&Config::server_port, plain(parse_port))},
      {"workspace_root", text_key(&Config::workspace_root, plain(parse_path_text))},
      {"model_dir", text_key(&Config::model_dir, plain(parse_path_text))},
      {"default_provision_profile", text_key(&Config::default_provision_profile, plain(parse_profile_name))},
      {"default_engine_runtime", text_key(&Config::default_engine_runtime, plain(parse_runtime_name))},
      {"default_engine_preset", text_key(&Config::default_engine_preset, plain(parse_profile_name))},
      {"default_engine_bind_host", text_key(&Config::default_engine_bind_host, plain(parse_bind_host))},
      {"default_backend", text_key(&Config::default_backend, plain(parse_backend_name))},
      {"inference_url", text_key(&Config::inference_url, plain(parse_inference_url))},
      {"model_name", text_key(&Config::model_name, plain(parse_model_name))},
      {"context_window", text_key(&Config::context_window, plain(context_window_text))},
      {"default_network", text_key(&Config::default_network, plain(parse_network))},
      {"allow_unlimited", text_key(&Config::allow_unlimited, plain(parse_bool_text))},
      {"audit", text_key(&Config::audit, plain(parse_bool_text))},
      {"audit_dir", text_key(&Config::audit_dir, parse_absolute_dir)},
  };
  return keys;
}

}  // namespace

void apply_config_env(Config& config, const Env& env, const Paths& paths, Log& log) {
  for (const EnvKey& key : env_keys()) {
    const ConfigKeyInfo* info = find_config_key(key.key);
    if (info == nullptr || info->env.empty()) continue;
    std::string var(info->env);
    auto text = env.get(var);
    if (!text) continue;
    if (text->empty() && var == "TNK_ENGINE_PRESET") {
      log.warn("TNK_ENGINE_PRESET is empty; ignoring env override");
      continue;
    }
    if (!key.apply(*text, config, paths.home)) {
      log.warn("invalid " + var + "='" + printable(*text) + "'; ignoring env override");
    }
  }
}

}  // namespace tnk::config
