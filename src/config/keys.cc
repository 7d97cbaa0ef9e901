#include "config/keys.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "config/config_values.h"
#include "config/key_kinds.h"
#include "workspace/workspace.h"

namespace tnk::config {
namespace {
namespace fs = std::filesystem;

template <class V>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <class Kind, class V>
void show_value(const Kind& kind, const V& value, ShownValue& shown) {
  if constexpr (IsOptional<V>::value) {
    if (value) return show_value(kind, *value, shown);
    shown.text = "<none>";
    shown.value = nullptr;
  } else {
    shown.text = kind.show(value);
    shown.value = kind.json(value);
  }
}

// `key` (its name and words) with the functions that read and show `member`, whose values are of `kind`.
template <class V, class Kind>
Key row(Key key, Setting<V> Config::*member, Kind kind) {
  key.is_table = kTakesTable<Kind>;
  key.from_file = [member, kind](const TomlValue& value, int line, Config& config, const fs::path& home) {
    FileVerdict verdict;
    verdict.taken = false;
    decltype(kind.from_text(std::string_view{}, home)) parsed;
    if constexpr (kTakesTable<Kind>) {
      parsed = kind.from_table(value, verdict.entry);
    } else {
      parsed = kind.from_file(value.scalar, home);
    }
    if (!parsed) return verdict;
    config.*member = Setting<V>{V(std::move(*parsed)), Source::kFile, line};
    return FileVerdict{};
  };
  key.from_env = [member, kind](std::string_view text, Config& config, const fs::path& home) {
    auto parsed = kind.from_text(text, home);
    if (!parsed) return false;
    config.*member = Setting<V>{V(std::move(*parsed)), Source::kEnv, 0};
    return true;
  };
  key.show = [member, kind](const Config& config) {
    const Setting<V>& setting = config.*member;
    ShownValue shown;
    shown.source = setting.source;
    shown.line = setting.line;
    show_value(kind, setting.value, shown);
    return shown;
  };
  return key;
}

// A directory or file written with ~ or $HOME: Config keeps the text and, in `expanded`, the path.
// `config show` shows the path, and the text as JSON's "value".
template <class Kind>
Key path_row(Key key, Setting<std::string> Config::*member, fs::path Config::*expanded, Kind kind) {
  key = row(std::move(key), member, kind);
  key.show = [show = key.show, expanded](const Config& config) {
    ShownValue shown = show(config);
    shown.text = shown.path = (config.*expanded).string();
    return shown;
  };
  key.expand = [member, expanded](Config& config, const fs::path& home) {
    config.*expanded = workspace::expand_user_path((config.*member).value, home);
  };
  return key;
}

constexpr std::string_view kSizeExpect = "a size such as \"2GiB\" or \"512MiB\" (a bare number means GiB)";
constexpr std::string_view kDirExpect = "a non-empty string (a directory path)";

// The original tnk's seven keys, with its comments in the template word for word (anchor §2.5).
void add_original_keys(std::vector<Key>& keys) {
  keys.push_back(row({.name = "server_port",
                      .env = "TNK_SERVER_PORT",
                      .expect = "an integer from 1 to 65535",
                      .sample = Sample::kOriginal,
                      .sample_value = "8080",
                      .comment = "API port for local inference server"},
                     &Config::server_port, Integer<uint16_t>{1, 65535}));
  keys.push_back(path_row({.name = "workspace_root",
                           .env = "TNK_WORKSPACE_ROOT",
                           .expect = kDirExpect,
                           .sample = Sample::kOriginal,
                           .sample_value = R"("~/code")",
                           .comment = "Root used for project-to-sandbox mapping (must NOT be your home directory)"},
                          &Config::workspace_root, &Config::workspace_root_path, Text{parse_path_text}));
  keys.push_back(path_row({.name = "model_dir",
                           .env = "TNK_MODEL_DIR",
                           .expect = kDirExpect,
                           .sample = Sample::kOriginal,
                           .sample_value = R"("~/opt/models")",
                           .comment = "Base directory for model files"},
                          &Config::model_dir, &Config::model_dir_path, Text{parse_path_text}));
  keys.push_back(row({.name = "default_provision_profile",
                      .env = "TNK_PROVISION_PROFILE",
                      .expect = "a profile name (letters, digits, '_', '-', '.')",
                      .sample = Sample::kOriginal,
                      .sample_value = R"("pi")",
                      .comment = "Default sandbox profile"},
                     &Config::default_provision_profile, Text{parse_profile_name}));
  keys.push_back(row({.name = "default_engine_runtime",
                      .env = "TNK_ENGINE_RUNTIME",
                      .expect = "a runtime name (letters, digits, '_', '-')",
                      .sample = Sample::kOriginal,
                      .sample_value = R"("llama")",
                      .comment = R"(Inference runtime: "llama")"},
                     &Config::default_engine_runtime, Text{parse_runtime_name}));
  keys.push_back(row({.name = "default_engine_preset",
                      .env = "TNK_ENGINE_PRESET",
                      .expect = "a preset name (letters, digits, '_', '-', '.')",
                      .sample = Sample::kOriginalCommented,
                      .sample_value = R"("llama-default")",
                      .comment = R"(Preset to load when --preset is omitted from engine start.
Must match the filename stem of a file in ~/.config/tnk/provider.d/
Example: "llama-default" loads ~/.config/tnk/provider.d/llama-default.ini)"},
                     &Config::default_engine_preset, Text{parse_profile_name}));
  keys.push_back(
      row({.name = "default_engine_bind_host",
           .env = "TNK_ENGINE_BIND_HOST",
           .expect = "a host name or IP address",
           .sample = Sample::kOriginal,
           .sample_value = R"("127.0.0.1")",
           .comment = R"(Bind host for inference server (127.0.0.1 for localhost only, 0.0.0.0 for all interfaces))"},
          &Config::default_engine_bind_host, Text{parse_bind_host}));
}

// tnk's own top-level keys before [sandbox].
void add_own_keys(std::vector<Key>& keys) {
  constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();
  keys.push_back(row(
      {.name = "default_backend",
       .env = "TNK_BACKEND",
       .expect = "one of auto, vm, ns, lima, k8s",
       .sample = Sample::kCommented,
       .sample_value = R"("auto")",
       .comment =
           R"(Sandbox backend: "auto" (the best one available here; `tnk doctor` says which), "vm", "ns" or "lima")"},
      &Config::default_backend, Text{parse_backend_name}));
  keys.push_back(row(
      {.name = "inference_url",
       .env = "TNK_INFERENCE_URL",
       .expect = "an http:// or https:// URL with a host",
       .sample = Sample::kCommented,
       .sample_value = R"("http://127.0.0.1:8080/v1")",
       .comment =
           R"(Full URL of the inference API, for a server that is not http://<default_engine_bind_host>:<server_port>/v1)"},
      &Config::inference_url, Text{parse_inference_url}));
  keys.push_back(
      row({.name = "model_name",
           .env = "TNK_MODEL_NAME",
           .expect = "a non-empty string",
           .sample = Sample::kCommented,
           .sample_value = R"("my-model")",
           .comment = R"(Model name and context window (tokens) given to agents when the server does not report them)"},
          &Config::model_name, Text{parse_model_name}));
  keys.push_back(row({.name = "context_window",
                      .env = "TNK_CTX_WINDOW",
                      .expect = "a positive integer (tokens)",
                      .sample = Sample::kCommented,
                      .sample_value = "32768"},
                     &Config::context_window, Integer<uint64_t>{1, kMaxInt}));
  keys.push_back(
      row({.name = "default_network",
           .env = "TNK_NETWORK",
           .expect = "one of none, inference, allowlist, open (or the original's restricted)",
           .sample = Sample::kCommented,
           .sample_value = R"("inference")",
           .comment =
               R"(Network of new sandboxes: "none", "inference" (only the inference endpoint), "allowlist" or "open")"},
          &Config::default_network, Text{parse_network}));
  keys.push_back(
      row({.name = "allow_unlimited",
           .env = "TNK_ALLOW_UNLIMITED",
           .expect = "true or false",
           .sample = Sample::kCommented,
           .sample_value = "false",
           .comment =
               R"(Start sandboxes even where their pids and memory limits (vm: the pids limit of QEMU and its helpers)
cannot be applied (no cgroup for them; `sudo tnk setup --user NAME` gives one): a fork bomb or a
memory hog inside then reaches the host)"},
          &Config::allow_unlimited, Flag{}));
}

// [sandbox], then the audit keys (the template puts top-level keys first, as TOML needs).
void add_sandbox_and_audit_keys(std::vector<Key>& keys) {
  keys.push_back(
      row({.name = "sandbox.cpus",
           .expect = "an integer from 1 to 1024",
           .sample = Sample::kCommented,
           .sample_value = "2",
           .comment = R"(Resources of each sandbox (sizes such as "512MiB" or "2GiB"; a bare number means GiB))"},
          &Config::sandbox_cpus, Integer<unsigned>{1, kMaxCpus}));
  keys.push_back(
      row({.name = "sandbox.memory", .expect = kSizeExpect, .sample = Sample::kCommented, .sample_value = R"("2GiB")"},
          &Config::sandbox_memory_bytes, Size{}));
  keys.push_back(
      row({.name = "sandbox.disk", .expect = kSizeExpect, .sample = Sample::kCommented, .sample_value = R"("8GiB")"},
          &Config::sandbox_disk_bytes, Size{}));
  keys.push_back(
      row({.name = "audit",
           .env = "TNK_AUDIT",
           .expect = "true or false",
           .sample = Sample::kCommented,
           .sample_value = "false",
           .comment =
               R"(Write an NDJSON audit log of every session into audit_dir ($XDG_STATE_HOME/tnk/audit by default))"},
          &Config::audit, Flag{}));
  keys.push_back(path_row({.name = "audit_dir",
                           .env = "TNK_AUDIT_DIR",
                           .expect = "an absolute directory path (~ and $HOME are expanded)",
                           .sample = Sample::kCommented,
                           .sample_value = R"("~/.local/state/tnk/audit")"},
                          &Config::audit_dir, &Config::audit_dir_path, Text{parse_absolute_dir}));
}

// [inference]: what the inference gateway adds. The key itself is never in Config (config/api_key.h).
void add_inference_keys(std::vector<Key>& keys) {
  keys.push_back(
      row({.name = "inference.api_key_env",
           .expect = "a variable name (letters, digits, '_'; not starting with a digit)",
           .sample = Sample::kCommented,
           .sample_value = R"("OPENAI_API_KEY")",
           .comment =
               R"(The inference gateway: the endpoint's API key from a variable of tnk's environment (api_key_env), or
instead from a file only you can read (api_key_file: "~/.config/tnk/inference.key"); requests to the
server at a time per sandbox; model names agents ask for, and the served model each one means)"},
          &Config::inference_api_key_env, Text{parse_env_name}));
  keys.push_back(
      row({.name = "inference.api_key_file", .expect = "a non-empty string (a file path; ~ and $HOME are expanded)"},
          &Config::inference_api_key_file, Text{parse_path_text}));
  keys.push_back(row({.name = "inference.concurrency",
                      .expect = "an integer from 1 to 64",
                      .sample = Sample::kCommented,
                      .sample_value = "4"},
                     &Config::inference_concurrency, Integer<unsigned>{1, 64}));
  keys.push_back(
      row({.name = "inference.request_limit", .expect = kSizeExpect}, &Config::inference_request_limit, Size{}));
  keys.push_back(
      row({.name = "inference.answer_limit", .expect = kSizeExpect}, &Config::inference_answer_limit, Size{}));
  keys.push_back(row({.name = "inference.aliases",
                      .expect = "a table of name = \"served model\" (both non-empty strings)",
                      .sample = Sample::kCommented,
                      .sample_value = R"("gpt-4o" = "qwen2.5-coder-7b")"},
                     &Config::inference_aliases, Aliases{}));
}

// [k8s]: the k8s backend's cluster (docs/k8s-backend.md). Not in the template: few users have a cluster.
void add_k8s_keys(std::vector<Key>& keys) {
  keys.push_back(row({.name = "k8s.context", .expect = "a non-empty string (a context of the kubeconfig)"},
                     &Config::k8s_context, Text{parse_model_name}));
  keys.push_back(row({.name = "k8s.kubeconfig", .expect = "a non-empty string (a file path)"}, &Config::k8s_kubeconfig,
                     Text{parse_path_text}));
  keys.push_back(row({.name = "k8s.namespace", .expect = "a Kubernetes namespace name ([a-z0-9-], at most 63)"},
                     &Config::k8s_namespace, Text{parse_k8s_label}));
  keys.push_back(row({.name = "k8s.runtime_class", .expect = "a RuntimeClass name (a DNS subdomain, lower case)"},
                     &Config::k8s_runtime_class, Text{parse_k8s_subdomain}));
  keys.push_back(row({.name = "k8s.storage_class", .expect = "a StorageClass name (a DNS subdomain, lower case)"},
                     &Config::k8s_storage_class, Text{parse_k8s_subdomain}));
  keys.push_back(row(
      {.name = "k8s.image_registry", .expect = "a registry and path without a scheme (\"registry.example.com/team\")"},
      &Config::k8s_image_registry, Text{parse_image_registry}));
  keys.push_back(row({.name = "k8s.warm_pool", .expect = "an integer from 0 to 100 (warm sandboxes per profile)"},
                     &Config::k8s_warm_pool, Integer<unsigned>{0, 100}));
  keys.push_back(row({.name = "k8s.allow_runc", .expect = "true or false (run the agent in a plain container)"},
                     &Config::k8s_allow_runc, Flag{}));
}

}  // namespace

const std::vector<Key>& keys() {
  static const std::vector<Key> table = [] {
    std::vector<Key> all;
    add_original_keys(all);
    add_own_keys(all);
    add_sandbox_and_audit_keys(all);
    add_inference_keys(all);
    add_k8s_keys(all);
    return all;
  }();
  return table;
}

const Key* find_key(std::string_view name) {
  const auto& all = keys();
  auto it = std::find_if(all.begin(), all.end(), [name](const Key& key) { return key.name == name; });
  return it != all.end() ? &*it : nullptr;
}

bool is_key_table(std::string_view name) {
  return std::any_of(keys().begin(), keys().end(), [name](const Key& key) {
    return key.name.size() > name.size() && key.name.starts_with(name) && key.name[name.size()] == '.';
  });
}

}  // namespace tnk::config
