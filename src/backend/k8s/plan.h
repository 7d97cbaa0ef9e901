// The k8s backend's plan, as pure data: the Kubernetes objects one tnk sandbox becomes on a cluster
// (kubernetes-sigs/agent-sandbox's v1beta1 Sandbox and SandboxTemplate, and built-in kinds), from tnk's
// resolved sandbox and tnk.toml's [k8s]. Nothing here reads a file, the environment or the clock, so
// every object is golden-tested and checked against the CRDs' schemas (tests/unit/backend/k8s/).
// docs/k8s-backend.md maps each object; nothing of it has run against a real cluster.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "net/policy.h"

namespace tnk::k8s {

// The supervisor's ports, as the agent's pod reaches them through the supervisor's Service: the same
// numbers the ns and vm backends give the sandbox on its loopback.
inline constexpr uint16_t kProxyPort = 3128;      // the egress proxy (allowlist, open)
inline constexpr uint16_t kRoutesPort = 3130;     // the credential routes' gateway
inline constexpr uint16_t kInferencePort = 8080;  // the inference gateway

// tnk.toml's [k8s], as the plan needs it.
struct ClusterSettings {
  std::string ns = "default";                // k8s.namespace
  std::optional<std::string> runtime_class;  // k8s.runtime_class; nullopt: the cluster's default (plain runc)
  std::optional<std::string> storage_class;  // k8s.storage_class; nullopt: the cluster's default
  std::string image_registry;                // k8s.image_registry; empty: images named without a registry
  unsigned warm_pool = 0;                    // k8s.warm_pool: SandboxWarmPool replicas; 0: no pool
};

// A [[routes]] entry without its credential, which only the supervisor's Secret holds at start.
struct Route {
  std::string name;
  std::string host;
  uint16_t port = 443;
};

// One tnk sandbox, resolved.
struct SandboxSpec {
  std::string id;           // tnk's sandbox id (naming::sandbox_id)
  std::string project;      // the project directory's name
  std::string profile;      // the profile's name
  std::string fingerprint;  // the profile's provisioning fingerprint (hex); empty: nothing to provision
  unsigned cpus = 2;
  uint64_t memory_bytes = 0;
  uint64_t disk_bytes = 0;             // each claim's size
  std::string workdir = "/workspace";  // mounts.workspace
  NetworkPolicy network = NetworkPolicy::kInference;
  std::vector<std::string> allow_domains;  // network.allow (allowlist)
  std::vector<uint16_t> open_ports;        // network.open_ports (open, beyond 80 and 443)
  std::vector<Route> routes;
  std::string inference_upstream;  // the endpoint the supervisor's gateway passes requests to
  bool has_api_key = false;        // [inference] names a key: the Secret gets an entry for it
  std::string tnk_version;         // the supervisor image's tag
};

// Every object, in the order `kubectl apply -f -` should create them: the Secret and the Service before
// the pods that use them (a pod sees the Services that exist when it is created), the NetworkPolicies
// before the pods they confine, the SandboxTemplate before its warm pool.
std::vector<nlohmann::json> plan_objects(const SandboxSpec& sandbox, const ClusterSettings& cluster);

// What a cluster may not give of what tnk promises, one sentence each, for the dry run's header.
std::vector<std::string> plan_notes(const SandboxSpec& sandbox, const ClusterSettings& cluster);

}  // namespace tnk::k8s
