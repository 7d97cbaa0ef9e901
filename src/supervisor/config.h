// What a supervisor needs to run one sandbox, handed from the command line to the supervisor
// process as JSON on an inherited fd: the supervisor reads no config, env or specs of its own,
// so what it runs is exactly what the command line resolved.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "naming/backend_kind.h"
#include "net/credential_route.h"
#include "net/live_policy.h"
#include "net/policy.h"
#include "net/ssh_agent_filter.h"

namespace tnk::supervisor {

// What the inference gateway (net/inference_forwarder.h) does besides checking paths, as the command line
// resolved it from tnk.toml and the profile. The key travels only on the config pipe: never in a file,
// an argument or the sandbox.
struct InferenceGateway {
  std::string api_key;                         // empty: none; the gateway adds it to each request
  std::map<std::string, std::string> aliases;  // model name an agent asks for -> model the server has
  unsigned concurrency = 4;                    // requests upstream at a time per sandbox; more queue, then 429
  uint64_t request_limit = 32 << 20;           // bytes of a request body (413 beyond)
  uint64_t answer_limit = uint64_t{1} << 30;   // bytes of an answer (cut beyond)
  std::vector<std::string> token_env;          // session variables set to the per-start token, besides
                                               // TNK_INFERENCE_TOKEN (the profile's agent settings)
};

struct SupervisorConfig {
  std::string id;                           // the sandbox id
  BackendKind backend = BackendKind::kNs;   // which engine runs it
  std::filesystem::path state_dir;          // $XDG_STATE_HOME/tnk/sandboxes/<id>
  std::filesystem::path image_root;         // the shared image tree (ns: the overlay lower)
  std::filesystem::path project_dir;        // the host project, the only host directory shared
  std::string mount_point;                  // where the project appears inside
  std::vector<std::string> readonly_paths;  // the manifest's mounts.readonly: project-relative, normalized
  bool review = false;  // review mode: the project under the layer state_dir/review/ (docs/workspace.md)
  std::optional<uint64_t> memory_bytes;
  std::optional<double> cpus;
  bool allow_unlimited = false;  // start without the pids or memory limit when they cannot apply (tnk.toml)
  // Started in a delegated systemd scope of its own (linux/systemd_scope.h), where it settles first. Set by
  // launch_supervisor, which decides it.
  bool cgroup_scope = false;
  std::string inference_host;                         // where the supervisor reaches the endpoint on the host
  uint16_t inference_port = 0;                        // 0: no endpoint forwarder
  InferenceGateway gateway;                           // what the inference gateway adds and checks
  NetworkPolicy network = NetworkPolicy::kInference;  // in JSON by its name (net/policy.h)
  std::vector<std::string> allow;  // allowlist: the domains the proxy lets through (registries resolved)
  // allowlist: the host user's rules (`tnk sandbox allow`, `deny`; net/live_policy.h) from the sandbox's
  // state at start; the supervisor keeps them, and their changes, while it runs.
  std::vector<net::LiveRule> live_rules;
  std::vector<uint16_t> open_ports;   // open (and provisioning under open): ports besides 80 and 443
  std::vector<PortForward> forwards;  // set up at start (the manifest's `ports`)
  std::filesystem::path audit_log;    // where network records go besides the sessions' own logs; empty: none
  // Credential routes (tnk.toml [[routes]]), their credentials resolved by the command line: like the
  // gateway's key, only on the config pipe. git_routes: route name -> URL prefix git is pointed away from.
  std::vector<net::CredentialRoute> routes;
  std::map<std::string, std::string> git_routes;
  // SSH routes (tnk.toml [[ssh_routes]]) and the host's agent they sign with (the starting command's
  // SSH_AUTH_SOCK): the sandbox gets an agent socket that passes on only what the routes allow.
  std::vector<net::SshRoute> ssh_routes;
  std::filesystem::path ssh_agent;
  // vm only: what the guest boots (image/kernel_and_disk.h), the overlay's size, and the accelerator.
  std::filesystem::path vm_kernel;
  std::filesystem::path vm_base_disk;
  std::optional<uint64_t> disk_bytes;
  bool vm_kvm = false;  // hardware KVM; TCG otherwise
};

nlohmann::json to_json(const SupervisorConfig& config);
Result<SupervisorConfig> config_from_json(const nlohmann::json& json);

}  // namespace tnk::supervisor
