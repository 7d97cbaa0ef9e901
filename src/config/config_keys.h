// The table of tnk.toml keys: name, TNK_* override (if any), and what a valid value looks like.
// The file parser, the env overrides and `config show` all read it, so they agree on names.
#pragma once

#include <array>
#include <string_view>

namespace tnk::config {

struct ConfigKeyInfo {
  std::string_view key;     // as written in tnk.toml; "sandbox.cpus" is `cpus` in `[sandbox]`
  std::string_view env;     // the overriding variable, or empty
  std::string_view expect;  // completes "key 'K' must be ..."
};

inline constexpr std::string_view kSizeExpect = "a size such as \"2GiB\" or \"512MiB\" (a bare number means GiB)";

inline constexpr std::array<ConfigKeyInfo, 24> kConfigKeys = {{
    {"server_port", "TNK_SERVER_PORT", "an integer from 1 to 65535"},
    {"workspace_root", "TNK_WORKSPACE_ROOT", "a non-empty string (a directory path)"},
    {"model_dir", "TNK_MODEL_DIR", "a non-empty string (a directory path)"},
    {"default_provision_profile", "TNK_PROVISION_PROFILE", "a profile name (letters, digits, '_', '-', '.')"},
    {"default_engine_runtime", "TNK_ENGINE_RUNTIME", "a runtime name (letters, digits, '_', '-')"},
    {"default_engine_preset", "TNK_ENGINE_PRESET", "a preset name (letters, digits, '_', '-', '.')"},
    {"default_engine_bind_host", "TNK_ENGINE_BIND_HOST", "a host name or IP address"},
    {"default_backend", "TNK_BACKEND", "one of auto, vm, ns, lima"},
    {"inference_url", "TNK_INFERENCE_URL", "an http:// or https:// URL with a host"},
    {"model_name", "TNK_MODEL_NAME", "a non-empty string"},
    {"context_window", "TNK_CTX_WINDOW", "a positive integer (tokens)"},
    {"default_network", "TNK_NETWORK", "one of none, inference, allowlist, open (or the original's restricted)"},
    {"allow_unlimited", "TNK_ALLOW_UNLIMITED", "true or false"},
    {"sandbox.cpus", "", "an integer from 1 to 1024"},
    {"sandbox.memory", "", kSizeExpect},
    {"sandbox.disk", "", kSizeExpect},
    {"audit", "TNK_AUDIT", "true or false"},
    {"audit_dir", "TNK_AUDIT_DIR", "an absolute directory path (~ and $HOME are expanded)"},
    {"inference.api_key_env", "", "a variable name (letters, digits, '_'; not starting with a digit)"},
    {"inference.api_key_file", "", "a non-empty string (a file path; ~ and $HOME are expanded)"},
    {"inference.concurrency", "", "an integer from 1 to 64"},
    {"inference.request_limit", "", kSizeExpect},
    {"inference.answer_limit", "", kSizeExpect},
    {"inference.aliases", "", "a table of name = \"served model\" (both non-empty strings)"},
}};

constexpr const ConfigKeyInfo* find_config_key(std::string_view key) {
  for (const auto& info : kConfigKeys) {
    if (info.key == key) return &info;
  }
  return nullptr;
}

}  // namespace tnk::config
