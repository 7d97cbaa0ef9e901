// Everything a sandbox command needs to know before touching a backend, worked out from the
// cwd, tnk.toml, the specs and the host: which project, which sandbox id, which profile and
// manifest, where the project appears in the guest, the runtime variables, and which backend.
// Pure reading: nothing here creates or changes anything.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "context/context.h"
#include "inference/model_probe.h"
#include "inference/runtime_model.h"
#include "naming/backend_kind.h"
#include "sandbox/started_with.h"
#include "specs/manifest.h"
#include "state/liveness.h"
#include "state/record.h"
#include "workspace/workspace.h"

namespace tnk::sandbox {

struct ResolveOptions {
  std::optional<std::string> profile;    // --profile
  std::optional<std::string> backend;    // --backend
  std::optional<NetworkPolicy> network;  // --network
  bool review = false;                   // --review
  // exec and shell (the warm path), and the policy verbs, which do not use the model at all: a running
  // sandbox is taken with what its start was told of the endpoint, which is not asked again. Every other
  // command (start, inspect, ...) asks it.
  bool keep_started_endpoint = false;
};

struct Resolved {
  workspace::Project project;
  std::string id;
  std::string profile;
  std::string profile_source;  // "--profile", "sandbox record", "config", "fallback"
  specs::Manifest manifest;
  NetworkPolicy network = NetworkPolicy::kInference;  // --network, else the manifest's, else default_network
  std::string network_source;                         // "--network", "manifest", "config"
  bool review = false;        // review mode (docs/workspace.md): --review, else the manifest's `workspace:`
  std::string review_source;  // "--review", "manifest", "default"
  std::optional<std::filesystem::path> manifest_file;
  std::optional<std::filesystem::path> provision_script;       // the agent phase: <profile>.sh
  std::optional<std::filesystem::path> provision_root_script;  // the root phase, run first: <profile>.root.sh
  std::string guest_workdir;
  std::string host_inference_url;  // where the host reaches the endpoint
  inference::RuntimeModel model;
  std::map<std::string, std::string> runtime_env;  // TNK_* variables handed into the sandbox, and agent.url_env
  specs::AgentSettings agent;                      // the manifest's agent_env, for this endpoint
  BackendKind backend = BackendKind::kNs;
  std::string backend_source;                  // "--backend", "sandbox record", "config", "auto"
  std::string backend_why;                     // why auto chose it
  std::string backend_weaker_note;             // what is weaker than vm, when auto fell back
  std::optional<state::SandboxRecord> record;  // nullopt: the sandbox does not exist yet
  state::SandboxState state = state::SandboxState::kAbsent;
  std::vector<std::string> notes;  // one-liners worth showing (fallbacks, a down endpoint)
};

// Everything but the endpoint's model and the runtime variables: settle_endpoint adds those once the
// caller knows whether the sandbox runs.
Result<Resolved> resolve(Context& ctx, const ResolveOptions& options);

// The model the sandbox's sessions are told about, and the runtime variables: what the running sandbox
// was started with (`started`: its endpoint is not asked again), else what the endpoint answers now.
Status settle_endpoint(Context& ctx, Resolved& r, const std::optional<StartedWith>& started);

// One GET /models of the endpoint (<= 1 s), answered from a 30 s cache when it is fresh.
inference::ModelInfo probe_endpoint(Context& ctx, const std::string& url);

// The runtime variable names, in the order they are documented.
const std::vector<std::string>& runtime_env_names();

// The agent settings as `inspect` shows them: each variable with its value, "<token>" for those the
// supervisor sets to the per-start token (which the command line never knows).
std::map<std::string, std::string> agent_env_shown(const Resolved& resolved);
inline constexpr const char* kTokenShown = "<token>";

nlohmann::json to_json(const Resolved& resolved);

// The record a first start writes for the resolved sandbox, made from the image `image_id` (each backend's
// own name for it: an image id, a Lima template, a cluster's image reference).
state::SandboxRecord new_record(const Resolved& resolved, std::string image_id);

}  // namespace tnk::sandbox
