// tnk.toml and its TNK_* environment overrides: every key, its value, and where the value came from.
// Loaded once per command (the original re-read it and repeated its warnings, bug 35); the result is
// passed down, never re-read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/routes.h"
#include "core/env.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/result.h"
#include "net/policy.h"
#include "net/ssh_agent_filter.h"

namespace tnk {

enum class Source { kDefault, kFile, kEnv };
std::string to_string(Source source);  // "default", "file", "env"

template <class T>
struct Setting {
  T value;
  Source source = Source::kDefault;
  int line = 0;  // the line of the key in tnk.toml when source == kFile
};

inline constexpr uint64_t kGiB = uint64_t{1} << 30;

struct Config {
  std::filesystem::path file;  // the tnk.toml path
  bool file_exists = false;

  // The original's seven keys (same names, same defaults; workspace_root is ~/code everywhere, bug 17).
  Setting<uint16_t> server_port{8080};
  Setting<std::string> workspace_root{"~/code"};  // raw text as written
  std::filesystem::path workspace_root_path;      // expanded (~, $HOME, ${HOME}); workspace/ validates it
  Setting<std::string> model_dir{"~/opt/models"};
  std::filesystem::path model_dir_path;  // expanded like workspace_root
  Setting<std::string> default_provision_profile{"pi"};
  Setting<std::string> default_engine_runtime{"llama"};  // any runtime name; passed on as TNK_ENGINE_RUNTIME
  Setting<std::optional<std::string>> default_engine_preset;
  Setting<std::string> default_engine_bind_host{"127.0.0.1"};

  // Ours.
  Setting<std::string> default_backend{"auto"};       // auto | vm | ns | lima | k8s
  Setting<std::optional<std::string>> inference_url;  // full URL; overrides http://<bind host>:<port>/v1
  Setting<std::optional<std::string>> model_name;
  Setting<std::optional<uint64_t>> context_window;
  Setting<NetworkPolicy> default_network{NetworkPolicy::kInference};
  // Start a sandbox even where its pids and memory limits (vm: its host processes' pids limit) cannot be
  // applied (no cgroup for them),
  // with a note; false refuses such a start (exit 77), since a fork bomb inside would reach the host.
  Setting<bool> allow_unlimited{false};
  Setting<unsigned> sandbox_cpus{2};                 // [sandbox] cpus
  Setting<uint64_t> sandbox_memory_bytes{2 * kGiB};  // [sandbox] memory = "2GiB"
  Setting<uint64_t> sandbox_disk_bytes{8 * kGiB};    // [sandbox] disk = "8GiB"
  Setting<bool> audit{false};                        // every session writes an audit log
  Setting<std::string> audit_dir;                    // default: Paths::default_audit_dir()
  std::filesystem::path audit_dir_path;              // expanded; always absolute
  std::vector<RouteSetting> routes;                  // [[routes]], in file order (config/routes.h)
  std::vector<net::SshRoute> ssh_routes;             // [[ssh_routes]], in file order (docs/network.md)

  // [inference]: what the inference gateway adds (docs/config.md). The key itself is never held here:
  // read_api_key (config/api_key.h) reads it when a sandbox starts, from the variable or the file named.
  Setting<std::optional<std::string>> inference_api_key_env;      // a variable of tnk's environment
  Setting<std::optional<std::string>> inference_api_key_file;     // raw text as written (~ expanded when read)
  Setting<unsigned> inference_concurrency{4};                     // requests upstream at a time per sandbox
  Setting<uint64_t> inference_request_limit{32 << 20};            // bytes of a request's body the gateway takes
  Setting<uint64_t> inference_answer_limit{kGiB};                 // bytes of an answer it passes, then cuts
  Setting<std::map<std::string, std::string>> inference_aliases;  // [inference.aliases] name = "served model"

  // [k8s]: the cluster of the k8s backend (docs/k8s-backend.md). The runner reaches it with the first two
  // (through kubectl); the plan reads the rest.
  Setting<std::optional<std::string>> k8s_context;         // a context of the kubeconfig
  Setting<std::optional<std::string>> k8s_kubeconfig;      // raw text as written
  Setting<std::string> k8s_namespace{"default"};           // where every object goes
  Setting<std::optional<std::string>> k8s_runtime_class;   // the agent pod's runtimeClassName (gVisor, Kata)
  Setting<std::optional<std::string>> k8s_storage_class;   // of the home and working-copy claims
  Setting<std::optional<std::string>> k8s_image_registry;  // where the per-fingerprint images live
  Setting<unsigned> k8s_warm_pool{0};                      // SandboxWarmPool replicas per template; 0: none
  Setting<bool> k8s_allow_runc{false};                     // run the agent in a plain container anyway
};

// The configuration with no file and no environment: the defaults, with the paths filled in.
Config default_config(const Paths& paths);

// Reads paths.config_file() (a missing file means defaults and one info line), then applies the TNK_*
// overrides from `env`. File errors (syntax, wrong types, invalid values) fail with <file>:<line>:<col>;
// unknown keys and invalid env values are warnings.
Result<Config> load_config(const Paths& paths, const Env& env, Log& log);

// The inference endpoint as seen from the host: inference_url when set, else
// http://<bind host, 127.0.0.1 for a wildcard bind>:<server_port>/v1.
std::string host_inference_url(const Config& config);

// The same endpoint as seen from a sandbox: the host replaced by `host_alias`; the port is always
// explicit (80/443 by scheme when inference_url has none), the path is kept.
std::string guest_inference_url(const Config& config, std::string_view host_alias = "host.lima.internal");

}  // namespace tnk
