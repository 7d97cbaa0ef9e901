// The agent's side of the plan: the pod template the Sandbox and the SandboxTemplate share, the claims
// for the agent's home and the working copy, and the template's warm pool and deny-all policy.
#include "backend/k8s/names.h"
#include "backend/k8s/objects.h"

namespace tnk::k8s {

using json = nlohmann::json;

namespace {

constexpr const char* kAgentsGroup = "agents.x-k8s.io/v1beta1";
constexpr const char* kExtensionsGroup = "extensions.agents.x-k8s.io/v1beta1";
constexpr const char* kHomeDir = "/home/agent";
constexpr int64_t kAgentUid = 1000;  // the image's agent user, as in the ns and vm images

// A claim of the sandbox's disk size; the agent-sandbox controller makes one per sandbox.
json claim(const char* name, const SandboxSpec& sandbox, const ClusterSettings& cluster) {
  json spec = {{"accessModes", json::array({"ReadWriteOnce"})},
               {"resources", {{"requests", {{"storage", quantity(sandbox.disk_bytes)}}}}}};
  if (cluster.storage_class) spec["storageClassName"] = *cluster.storage_class;
  return {{"metadata", {{"name", name}}}, {"spec", spec}};
}

json claims(const SandboxSpec& sandbox, const ClusterSettings& cluster) {
  return json::array({claim("home", sandbox, cluster), claim("workspace", sandbox, cluster)});
}

json agent_container(const SandboxSpec& sandbox, const ClusterSettings& cluster) {
  json resources = {{"cpu", std::to_string(sandbox.cpus)}, {"memory", quantity(sandbox.memory_bytes)}};
  return {
      {"name", "agent"},
      {"image", image(cluster, "tnk-" + label_value(sandbox.profile),
                      sandbox.fingerprint.empty() ? "none" : sandbox.fingerprint.substr(0, 12))},
      // Sessions are started in it (kubectl exec, or the supervisor's channel); it runs nothing itself.
      {"command", json::array({"sleep", "infinity"})},
      {"workingDir", sandbox.workdir},
      {"resources", {{"requests", resources}, {"limits", resources}}},
      {"securityContext",
       {{"allowPrivilegeEscalation", false},
        {"capabilities", {{"drop", json::array({"ALL"})}}},
        {"privileged", false}}},
      {"volumeMounts", json::array({json{{"name", "home"}, {"mountPath", kHomeDir}},
                                    json{{"name", "workspace"}, {"mountPath", sandbox.workdir}}})},
  };
}

// What every agent pod of the profile shares: no API token, no host namespaces, the runtime class.
json pod_spec(const SandboxSpec& sandbox, const ClusterSettings& cluster) {
  json spec = {
      {"automountServiceAccountToken", false},
      {"hostNetwork", false},
      {"hostPID", false},
      {"hostIPC", false},
      {"securityContext",
       {{"runAsNonRoot", true},
        {"runAsUser", kAgentUid},
        {"runAsGroup", kAgentUid},
        {"fsGroup", kAgentUid},
        {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
      {"containers", json::array({agent_container(sandbox, cluster)})},
  };
  if (cluster.runtime_class) spec["runtimeClassName"] = *cluster.runtime_class;
  return spec;
}

// The variables that point the agent at its supervisor, through the variable Kubernetes sets for the
// supervisor's Service (created first, plan_objects): the pod has no DNS to ask.
json supervisor_env(const SandboxSpec& sandbox, const Names& names) {
  json env = json::array();
  auto add = [&env](const std::string& name, const std::string& value) {
    env.push_back({{"name", name}, {"value", value}});
  };
  std::string host = "$(" + service_host_variable(names.supervisor) + ")";
  add("TNK_WORKSPACE_MOUNT", sandbox.workdir);
  for (const auto& [name, port] : agent_reachable_ports(sandbox)) {
    std::string url = "http://" + host + ":" + std::to_string(port);
    if (port == kInferencePort) {
      add("TNK_INFERENCE_URL", url + "/v1");
      add("TNK_OPENAI_URL", url + "/v1");
    } else if (port == kProxyPort) {
      for (const char* variable : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}) add(variable, url);
    } else {
      add("TNK_ROUTES_URL", url);
    }
  }
  return env;
}

}  // namespace

json sandbox_object(const SandboxSpec& sandbox, const ClusterSettings& cluster, const Names& names) {
  json spec = pod_spec(sandbox, cluster);
  spec["enableServiceLinks"] = true;  // how the agent finds its supervisor (supervisor_env)
  spec["containers"][0]["env"] = supervisor_env(sandbox, names);
  json meta = metadata(names.sandbox, cluster, sandbox_labels(sandbox, names, kRoleAgent));
  meta["annotations"] = {{std::string(kLabelPrefix) + "id", sandbox.id},
                         {std::string(kLabelPrefix) + "project", sandbox.project},
                         {std::string(kLabelPrefix) + "network", to_string(sandbox.network)},
                         {std::string(kLabelPrefix) + "workspace", "review"}};
  json pod_template = {{"metadata", {{"labels", sandbox_labels(sandbox, names, kRoleAgent)}}}, {"spec", spec}};
  return {{"apiVersion", kAgentsGroup},
          {"kind", "Sandbox"},
          {"metadata", meta},
          {"spec",
           {{"operatingMode", "Running"},
            {"podTemplate", pod_template},
            {"volumeClaimTemplates", claims(sandbox, cluster)}}}};
}

json template_object(const SandboxSpec& sandbox, const ClusterSettings& cluster, const Names& names) {
  json pod_labels = template_labels(sandbox, names);
  pod_labels[std::string(kLabelPrefix) + "role"] = kRoleAgent;
  return {{"apiVersion", kExtensionsGroup},
          {"kind", "SandboxTemplate"},
          {"metadata", metadata(names.templ, cluster, template_labels(sandbox, names))},
          {"spec",
           {{"podTemplate", {{"metadata", {{"labels", pod_labels}}}, {"spec", pod_spec(sandbox, cluster)}}},
            {"volumeClaimTemplates", claims(sandbox, cluster)},
            // tnk's own policies (template_deny_policy, agent_policy) are the only ones: a managed one
            // would be added to them, and NetworkPolicies only ever add what may pass.
            {"networkPolicyManagement", "Unmanaged"},
            {"envVarsInjectionPolicy", "Disallowed"}}}};
}

json warm_pool_object(const SandboxSpec& sandbox, const ClusterSettings& cluster, const Names& names) {
  return {{"apiVersion", kExtensionsGroup},
          {"kind", "SandboxWarmPool"},
          {"metadata", metadata(names.templ, cluster, template_labels(sandbox, names))},
          {"spec", {{"replicas", cluster.warm_pool}, {"sandboxTemplateRef", {{"name", names.templ}}}}}};
}

// Every agent pod of the template, claimed or warm, may reach nothing and be reached by nothing; the
// sandbox's own policy (agent_policy) adds its supervisor.
json template_deny_policy(const SandboxSpec& sandbox, const ClusterSettings& cluster, const Names& names) {
  return {
      {"apiVersion", "networking.k8s.io/v1"},
      {"kind", "NetworkPolicy"},
      {"metadata", metadata(names.templ + "-deny", cluster, template_labels(sandbox, names))},
      {"spec",
       {{"podSelector",
         {{"matchLabels",
           {{std::string(kLabelPrefix) + "template", names.templ}, {std::string(kLabelPrefix) + "role", kRoleAgent}}}}},
        {"policyTypes", json::array({"Ingress", "Egress"})}}}};
}

}  // namespace tnk::k8s
