// The supervisor's side of the plan: its own Pod (the proxy, the inference gateway, the credential
// routes, the audit records), never a sidecar of the agent's pod; the Secret only that pod mounts; the
// Service the agent's pod reaches it by; and the policies that let the agent reach it and nothing else.
#include "backend/k8s/names.h"
#include "backend/k8s/objects.h"

namespace tnk::k8s {

using json = nlohmann::json;

namespace {

constexpr const char* kKeysDir = "/run/tnk/keys";
constexpr int64_t kSupervisorUid = 65532;  // an unprivileged id with no entry anywhere
constexpr int kKeysMode = 0400;

json policy_ports(const SandboxSpec& sandbox) {
  json ports = json::array();
  for (const auto& [name, port] : agent_reachable_ports(sandbox))
    ports.push_back({{"protocol", "TCP"}, {"port", port}});
  return ports;
}

// What the supervisor enforces, without a credential: its configuration, as one JSON value.
std::string supervisor_config(const SandboxSpec& sandbox) {
  json routes = json::array();
  for (const auto& route : sandbox.routes) {
    routes.push_back({{"name", route.name},
                      {"upstream", "https://" + route.host + ":" + std::to_string(route.port)},
                      {"credential_file", std::string(kKeysDir) + "/route-" + secret_key(route.name)}});
  }
  json config = {{"sandbox", sandbox.id},
                 {"network", to_string(sandbox.network)},
                 {"allow", sandbox.allow_domains},
                 {"open_ports", sandbox.open_ports},
                 {"inference_upstream", sandbox.inference_upstream},
                 {"routes", routes},
                 {"token_file", std::string(kKeysDir) + "/token"}};
  if (sandbox.has_api_key) config["api_key_file"] = std::string(kKeysDir) + "/inference-api-key";
  return config.dump();
}

json supervisor_container(const SandboxSpec& sandbox, const ClusterSettings& cluster) {
  json ports = json::array();
  for (const auto& [name, port] : agent_reachable_ports(sandbox)) {
    ports.push_back({{"name", name}, {"containerPort", port}, {"protocol", "TCP"}});
  }
  return {
      {"name", "supervisor"},
      {"image", image(cluster, "tnk-supervisor", sandbox.tnk_version)},
      {"args", json::array({"supervise"})},
      {"env", json::array({json{{"name", "TNK_SUPERVISOR_CONFIG"}, {"value", supervisor_config(sandbox)}}})},
      {"ports", ports},
      {"resources",
       {{"requests", {{"cpu", "100m"}, {"memory", "64Mi"}}}, {"limits", {{"cpu", "1"}, {"memory", "256Mi"}}}}},
      {"securityContext",
       {{"allowPrivilegeEscalation", false},
        {"capabilities", {{"drop", json::array({"ALL"})}}},
        {"privileged", false},
        {"readOnlyRootFilesystem", true}}},
      {"volumeMounts", json::array({json{{"name", "keys"}, {"mountPath", kKeysDir}, {"readOnly", true}}})},
  };
}

}  // namespace

json keys_secret(const SandboxSpec& sandbox, const ClusterSettings& cluster, const Names& names) {
  json data = {{"token", ""}};
  if (sandbox.has_api_key) data["inference-api-key"] = "";
  for (const auto& route : sandbox.routes) data["route-" + secret_key(route.name)] = "";
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", metadata(names.keys, cluster, sandbox_labels(sandbox, names, kRoleSupervisor))},
          {"type", "Opaque"},
          {"stringData", data}};
}

json supervisor_service(const SandboxSpec& sandbox, const ClusterSettings& cluster, const Names& names) {
  json ports = json::array();
  for (const auto& [name, port] : agent_reachable_ports(sandbox)) {
    ports.push_back({{"name", name}, {"port", port}, {"targetPort", port}, {"protocol", "TCP"}});
  }
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", metadata(names.supervisor, cluster, sandbox_labels(sandbox, names, kRoleSupervisor))},
          {"spec",
           {{"type", "ClusterIP"}, {"selector", selector(names, kRoleSupervisor)["matchLabels"]}, {"ports", ports}}}};
}

json supervisor_pod(const SandboxSpec& sandbox, const ClusterSettings& cluster, const Names& names) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", metadata(names.supervisor, cluster, sandbox_labels(sandbox, names, kRoleSupervisor))},
          {"spec",
           {{"automountServiceAccountToken", false},
            {"enableServiceLinks", false},
            {"restartPolicy", "Always"},
            {"securityContext",
             {{"runAsNonRoot", true},
              {"runAsUser", kSupervisorUid},
              {"runAsGroup", kSupervisorUid},
              {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
            {"containers", json::array({supervisor_container(sandbox, cluster)})},
            {"volumes", json::array({json{{"name", "keys"},
                                          {"secret", {{"secretName", names.keys}, {"defaultMode", kKeysMode}}}}})}}}};
}

// The agent's pod: reached only by its supervisor (the session channel), reaching only its supervisor's
// ports; under `none` not even those.
json agent_policy(const SandboxSpec& sandbox, const ClusterSettings& cluster, const Names& names) {
  json from_supervisor = json::array({json{{"podSelector", selector(names, kRoleSupervisor)}}});
  json spec = {{"podSelector", selector(names, kRoleAgent)},
               {"policyTypes", json::array({"Ingress", "Egress"})},
               {"ingress", json::array({json{{"from", from_supervisor}}})},
               {"egress", json::array()}};
  if (!agent_reachable_ports(sandbox).empty()) {
    spec["egress"].push_back({{"to", from_supervisor}, {"ports", policy_ports(sandbox)}});
  }
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata", metadata(names.agent_policy, cluster, sandbox_labels(sandbox, names, kRoleAgent))},
          {"spec", spec}};
}

// The supervisor's pod: its ports are for its own agent's pod alone. Its egress (the endpoint, the
// allowed domains, the routes' hosts) is left open: a NetworkPolicy cannot name domains, the proxy can.
json supervisor_policy(const SandboxSpec& sandbox, const ClusterSettings& cluster, const Names& names) {
  json ingress = json::array();
  if (!agent_reachable_ports(sandbox).empty()) {
    ingress.push_back({{"from", json::array({json{{"podSelector", selector(names, kRoleAgent)}}})},
                       {"ports", policy_ports(sandbox)}});
  }
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata", metadata(names.supervisor, cluster, sandbox_labels(sandbox, names, kRoleSupervisor))},
          {"spec",
           {{"podSelector", selector(names, kRoleSupervisor)},
            {"policyTypes", json::array({"Ingress"})},
            {"ingress", ingress}}}};
}

}  // namespace tnk::k8s
