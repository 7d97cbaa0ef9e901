#include "backend/k8s/doctor_check.h"

#include <memory>
#include <thread>

#include "backend/k8s/egress_probe.h"
#include "backend/k8s/resources.h"
#include "core/random_token.h"
#include "core/strings.h"

namespace tnk::k8s {

using json = nlohmann::json;

namespace {

constexpr std::chrono::seconds kProbeTimeout{90};  // pulling the probe's image, then its 5 s connect

// One kubectl proxy for every check; the first check's failure to reach the cluster is every check's.
struct ClusterSession {
  Cluster cluster;
  std::unique_ptr<ClusterApi> api;
  std::optional<Error> unreachable;

  ClusterApi* connect() {
    if (!api && !unreachable) {
      auto connected = ClusterApi::connect(cluster.access);
      if (connected) {
        api = std::move(*connected);
      } else {
        unreachable = connected.error();
      }
    }
    return api.get();
  }
};

doctor::Outcome not_reached() {
  return {doctor::Status::kFail, "not checked: the cluster was not reached (above)", "fix the check above first"};
}

doctor::Outcome cluster_outcome(ClusterSession& session) {
  ClusterApi* api = session.connect();
  if (!api) return {doctor::Status::kFail, session.unreachable->message, session.unreachable->hint};
  auto version = api->get("/version");
  if (!version || !*version) {
    session.unreachable = version ? failed("the API server has no /version") : version.error();
    session.api.reset();  // the later checks say they were not made
    return {doctor::Status::kFail, session.unreachable->message,
            "check k8s.kubeconfig and k8s.context in tnk.toml: `kubectl cluster-info`"};
  }
  const std::string context = session.cluster.access.context ? "context " + *session.cluster.access.context
                                                             : "the kubeconfig's current context";
  return {doctor::Status::kOk,
          "Kubernetes " + (*version)->value("gitVersion", "?") + " through kubectl (" + context + ")", ""};
}

// Whether the API group/version lists the resource: what `kubectl api-resources` reads.
Result<bool> serves(ClusterApi& api, const std::string& group_version, const std::string& resource) {
  TNK_ASSIGN_OR_RETURN(auto list, api.get("/apis/" + group_version));
  if (!list) return false;
  for (const auto& r : list->value("resources", json::array())) {
    if (r.value("name", "") == resource) return true;
  }
  return false;
}

doctor::Outcome agent_sandbox_outcome(ClusterSession& session) {
  ClusterApi* api = session.connect();
  if (!api) return not_reached();
  std::vector<std::string> missing;
  for (const auto& [group_version, resource] : {std::pair{kSandboxApiVersion, "sandboxes"},
                                                std::pair{"extensions.agents.x-k8s.io/v1beta1", "sandboxtemplates"}}) {
    auto found = serves(*api, group_version, resource);
    if (!found) return {doctor::Status::kFail, found.error().message, found.error().hint};
    if (!*found) missing.push_back(std::string(resource) + " (" + group_version + ")");
  }
  if (!missing.empty()) {
    return {doctor::Status::kFail, "the cluster does not serve " + join(missing),
            "install agent-sandbox v1.0 and its extensions on the cluster (docs/k8s-backend.md)"};
  }
  return {doctor::Status::kOk, "agent-sandbox's Sandbox and SandboxTemplate (v1beta1) are served", ""};
}

doctor::Outcome runtime_class_outcome(ClusterSession& session) {
  ClusterApi* api = session.connect();
  if (!api) return not_reached();
  Status checked = check_runtime_class(*api, session.cluster);
  if (!checked.ok()) return {doctor::Status::kFail, checked.error().message, checked.error().hint};
  if (!session.cluster.settings.runtime_class) {
    return {doctor::Status::kWarn, "no k8s.runtime_class: agents run in plain containers (k8s.allow_runc = true)",
            "name a gVisor or Kata RuntimeClass in tnk.toml (`kubectl get runtimeclass`)"};
  }
  return {doctor::Status::kOk, "agents run under the RuntimeClass '" + *session.cluster.settings.runtime_class + "'",
          ""};
}

// The exit code of a pod that ran to its end, or nullopt while it has not (or an error).
Result<std::optional<int>> pod_exit(ClusterApi& api, const std::string& path) {
  TNK_ASSIGN_OR_RETURN(auto pod, api.get(path));
  if (!pod) return failed("the probe pod " + path + " went away");
  const json& status = member(*pod, "status");
  const std::string phase = status.value("phase", "Pending");
  if (phase != "Succeeded" && phase != "Failed") return std::optional<int>();
  const json containers = status.value("containerStatuses", json::array());
  for (const auto& container : containers.is_array() ? containers : json::array()) {
    const json& terminated = member(member(container, "state"), "terminated");
    if (terminated.contains("exitCode")) return std::optional<int>(terminated.value("exitCode", 1));
  }
  return std::optional<int>(phase == "Succeeded" ? 0 : 1);
}

Result<std::pair<int, int>> run_probe(ClusterApi& api, const EgressProbe& probe, const std::string& ns) {
  for (const auto& object : probe.objects) TNK_RETURN_IF_ERROR(api.create(collection_path(object), object));
  const std::string confined = ObjectRef{"v1", "Pod", probe.confined}.path(ns);
  const std::string open = ObjectRef{"v1", "Pod", probe.open}.path(ns);
  const auto deadline = std::chrono::steady_clock::now() + kProbeTimeout;
  for (;;) {
    TNK_ASSIGN_OR_RETURN(auto confined_exit, pod_exit(api, confined));
    TNK_ASSIGN_OR_RETURN(auto open_exit, pod_exit(api, open));
    if (confined_exit && open_exit) return std::pair{*confined_exit, *open_exit};
    if (std::chrono::steady_clock::now() > deadline) {
      return failed("the probe pods did not finish within " + std::to_string(kProbeTimeout.count()) + " s",
                    "`kubectl -n " + ns + " describe pod " + probe.open +
                        "` says why (its image: " + probe.objects[2]["spec"]["containers"][0].value("image", "") + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

doctor::Outcome egress_outcome(ClusterSession& session) {
  ClusterApi* api = session.connect();
  if (!api) return not_reached();
  auto token = random_token();
  if (!token) return {doctor::Status::kFail, token.error().message, ""};
  const EgressProbe probe = egress_probe(session.cluster.settings, token->substr(0, 8));
  auto ran = run_probe(*api, probe, session.cluster.settings.ns);
  for (const auto& object : probe.objects) (void)api->remove(object_path(object));  // whatever happened
  if (!ran) return {doctor::Status::kFail, "the egress probe could not run: " + ran.error().message, ran.error().hint};
  const auto [confined, open] = *ran;
  const std::string fix = "use a network plugin that enforces NetworkPolicy egress (Calico, Cilium)";
  if (confined == 0) {
    return {doctor::Status::kFail,
            "the cluster does not enforce NetworkPolicy: a pod under a deny-all policy reached the API server's "
            "Service, so an agent's pod could reach anything its node can",
            fix};
  }
  if (open != 0) {
    return {doctor::Status::kWarn,
            "inconclusive: the probe pod without a policy could not reach the API server's Service either "
            "(exit " +
                std::to_string(open) + ")",
            "`kubectl -n " + session.cluster.settings.ns + " logs` of a probe pod while it runs shows why"};
  }
  return {doctor::Status::kOk,
          "a pod under a deny-all NetworkPolicy could not reach the API server's Service (exit " +
              std::to_string(confined) + "); the same pod without it could",
          ""};
}

}  // namespace

void add_k8s_doctor_checks(doctor::Registry& registry, const Cluster& cluster) {
  auto session = std::make_shared<ClusterSession>();
  session->cluster = cluster;
  registry.add({"k8s_cluster", "Kubernetes cluster", true, [session] { return cluster_outcome(*session); }});
  registry.add({"k8s_agent_sandbox", "agent-sandbox on the cluster", true,
                [session] { return agent_sandbox_outcome(*session); }});
  registry.add(
      {"k8s_runtime_class", "runtime class of agents", true, [session] { return runtime_class_outcome(*session); }});
  registry.add({"k8s_egress", "NetworkPolicy egress enforced", true, [session] { return egress_outcome(*session); }});
}

}  // namespace tnk::k8s
