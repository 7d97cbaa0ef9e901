#include "backend/k8s/plan.h"

#include "backend/k8s/names.h"
#include "backend/k8s/objects.h"

namespace tnk::k8s {

using json = nlohmann::json;

namespace {

std::string label(const char* name) { return std::string(kLabelPrefix) + name; }

std::string fingerprint_label(const SandboxSpec& sandbox) {
  return sandbox.fingerprint.empty() ? "none" : sandbox.fingerprint.substr(0, 16);
}

bool loopback_url(const std::string& url) {
  for (const char* host : {"://127.", "://localhost", "://[::1]"}) {
    if (url.find(host) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

Names names_of(const std::string& id) {
  Names names;
  names.sandbox = object_name(id);
  names.supervisor = names.sandbox + "-supervisor";
  names.keys = names.sandbox + "-keys";
  names.agent_policy = names.sandbox + "-agent";
  return names;
}

Names names_of(const SandboxSpec& sandbox) {
  Names names = names_of(sandbox.id);
  names.templ = template_name(sandbox.profile, sandbox.fingerprint);
  return names;
}

json template_labels(const SandboxSpec& sandbox, const Names& names) {
  return {{"app.kubernetes.io/managed-by", "tnk"},
          {label("profile"), label_value(sandbox.profile)},
          {label("fingerprint"), fingerprint_label(sandbox)},
          {label("template"), names.templ}};
}

json sandbox_labels(const SandboxSpec& sandbox, const Names& names, const char* role) {
  json labels = template_labels(sandbox, names);
  labels[label("project")] = label_value(sandbox.project);
  labels[label("sandbox")] = names.sandbox;
  labels[label("role")] = role;
  return labels;
}

json selector(const Names& names, const char* role) {
  return {{"matchLabels", {{label("sandbox"), names.sandbox}, {label("role"), role}}}};
}

json metadata(const std::string& name, const ClusterSettings& cluster, json labels) {
  return {{"name", name}, {"namespace", cluster.ns}, {"labels", std::move(labels)}};
}

std::vector<NamedPort> agent_reachable_ports(const SandboxSpec& sandbox) {
  if (sandbox.network == NetworkPolicy::kNone) return {};
  std::vector<NamedPort> ports = {{"inference", kInferencePort}};
  if (has_egress_proxy(sandbox.network)) ports.push_back({"proxy", kProxyPort});
  if (!sandbox.routes.empty()) ports.push_back({"routes", kRoutesPort});
  return ports;
}

std::string image(const ClusterSettings& cluster, const std::string& name, const std::string& tag) {
  return (cluster.image_registry.empty() ? "" : cluster.image_registry + "/") + name + ":" + tag;
}

std::vector<json> plan_objects(const SandboxSpec& sandbox, const ClusterSettings& cluster) {
  Names names = names_of(sandbox);
  std::vector<json> objects = {keys_secret(sandbox, cluster, names), template_deny_policy(sandbox, cluster, names),
                               agent_policy(sandbox, cluster, names), supervisor_policy(sandbox, cluster, names)};
  if (!agent_reachable_ports(sandbox).empty()) objects.push_back(supervisor_service(sandbox, cluster, names));
  objects.push_back(supervisor_pod(sandbox, cluster, names));
  objects.push_back(template_object(sandbox, cluster, names));
  if (cluster.warm_pool > 0) objects.push_back(warm_pool_object(sandbox, cluster, names));
  objects.push_back(sandbox_object(sandbox, cluster, names));
  return objects;
}

std::vector<std::string> plan_notes(const SandboxSpec& sandbox, const ClusterSettings& cluster) {
  std::vector<std::string> notes;
  if (!cluster.runtime_class) {
    notes.push_back(
        "no k8s.runtime_class: the agent's pod runs in the cluster's default runtime (plain runc on most), "
        "a container, not the boundary tnk promises; name a gVisor or Kata RuntimeClass");
  }
  notes.push_back(
      "the NetworkPolicies confine the agent's pod only on a cluster whose network plugin enforces them "
      "(Calico, Cilium); the supervisor's own egress is its proxy's to limit, no NetworkPolicy does");
  notes.push_back("the Secret's values are empty here: a start fills them in; only the supervisor's pod mounts it");
  notes.push_back(
      "no host directory is mounted: a start uploads the working copy into the 'workspace' claim, and "
      "changes come back only through review mode (tnk sandbox diff, apply)");
  if (loopback_url(sandbox.inference_upstream)) {
    notes.push_back("the inference endpoint " + sandbox.inference_upstream +
                    " is this machine's loopback, which the cluster cannot reach: set inference_url");
  }
  if (cluster.warm_pool > 0) {
    notes.push_back(
        "the warm pool's pods are held by the template's deny-all NetworkPolicy and get no supervisor "
        "until claimed; claiming them is a runner's job, which tnk's does not do yet");
  }
  return notes;
}

}  // namespace tnk::k8s
