// The pieces plan.cc puts together, shared by the agent's objects (agent_objects.cc) and the
// supervisor's (supervisor_objects.cc). Internal to backend/k8s. Pure.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/k8s/plan.h"

namespace tnk::k8s {

// The names of one sandbox's objects.
struct Names {
  std::string sandbox;     // the Sandbox, and the stem of the rest
  std::string templ;       // the SandboxTemplate (per profile fingerprint), its warm pool, its deny-all policy
  std::string supervisor;  // the supervisor's Pod, Service and NetworkPolicy
  std::string keys;        // the Secret only the supervisor's pod mounts
  std::string agent_policy;
};
Names names_of(const SandboxSpec& sandbox);
Names names_of(const std::string& id);  // all but `templ`, which needs the profile and its fingerprint

// Labels: the template's (profile, fingerprint) on everything; the sandbox's and a role on its own.
nlohmann::json template_labels(const SandboxSpec& sandbox, const Names& names);
nlohmann::json sandbox_labels(const SandboxSpec& sandbox, const Names& names, const char* role);
nlohmann::json selector(const Names& names, const char* role);  // matchLabels of one sandbox's pod
nlohmann::json metadata(const std::string& name, const ClusterSettings& cluster, nlohmann::json labels);

inline constexpr const char* kRoleAgent = "agent";
inline constexpr const char* kRoleSupervisor = "supervisor";

// The supervisor's ports the agent's pod may reach under the sandbox's policy, with their names.
struct NamedPort {
  const char* name;
  uint16_t port;
};
std::vector<NamedPort> agent_reachable_ports(const SandboxSpec& sandbox);

// The agent's side: the Sandbox, the SandboxTemplate, its warm pool and its deny-all NetworkPolicy.
nlohmann::json sandbox_object(const SandboxSpec& sandbox, const ClusterSettings& cluster, const Names& names);
nlohmann::json template_object(const SandboxSpec& sandbox, const ClusterSettings& cluster, const Names& names);
nlohmann::json warm_pool_object(const SandboxSpec& sandbox, const ClusterSettings& cluster, const Names& names);
nlohmann::json template_deny_policy(const SandboxSpec& sandbox, const ClusterSettings& cluster, const Names& names);

// The supervisor's side: the Secret, the Service, the Pod, and the NetworkPolicies that let the agent's
// pod reach the supervisor and nothing else.
nlohmann::json keys_secret(const SandboxSpec& sandbox, const ClusterSettings& cluster, const Names& names);
nlohmann::json supervisor_service(const SandboxSpec& sandbox, const ClusterSettings& cluster, const Names& names);
nlohmann::json supervisor_pod(const SandboxSpec& sandbox, const ClusterSettings& cluster, const Names& names);
nlohmann::json agent_policy(const SandboxSpec& sandbox, const ClusterSettings& cluster, const Names& names);
nlohmann::json supervisor_policy(const SandboxSpec& sandbox, const ClusterSettings& cluster, const Names& names);

// An image in the configured registry ("<registry>/<name>:<tag>", or "<name>:<tag>" without one).
std::string image(const ClusterSettings& cluster, const std::string& name, const std::string& tag);

}  // namespace tnk::k8s
