#include "backend/k8s/k8s_backend.h"

#include "backend/k8s/resources.h"
#include "config/config.h"
#include "sandbox/provision.h"
#include "workspace/workspace.h"

namespace tnk::k8s {
namespace {

Error no_sessions() { return failed(kNoSessions, kNoSessionsHint); }

class K8sBackend final : public sandbox::Backend {
 public:
  explicit K8sBackend(Cluster cluster) : cluster_(std::move(cluster)) {}

  BackendKind kind() const override { return BackendKind::kK8s; }
  sandbox::Capabilities capabilities() const override { return {}; }

  sandbox::Observed observe(const Paths&, const std::string& id) override {
    auto connected = api();
    if (!connected) return {state::SandboxState::kAbsent, connected.error().message};
    auto found = (*connected)->get(sandbox_ref(id).path(cluster_.settings.ns));
    if (!found) return {state::SandboxState::kAbsent, found.error().message};
    return {sandbox_state(*found), std::nullopt};
  }
  Result<sandbox::StartOutcome> ensure_running(Context& ctx, const sandbox::Resolved& r,
                                               const std::filesystem::path&) override {
    TNK_ASSIGN_OR_RETURN(ClusterApi * connected, api());
    return ensure_running_k8s(ctx, r, cluster_, *connected);
  }
  // Provisioning belongs to the agent's image, one per profile fingerprint (tnk-<profile>:<fingerprint>),
  // which the cluster pulls: there is nothing to run in a started sandbox.
  Status provision_if_needed(Context&, const sandbox::Resolved&, const sandbox::ProvisionRequest&,
                             std::optional<audit::AuditWriter>&) override {
    return ok_status();
  }
  Result<int> run_session(Context&, const sandbox::Resolved&, const sandbox::SessionSpec&,
                          std::optional<audit::AuditWriter>&) override {
    return no_sessions();
  }
  Status stop(const Paths& paths, const std::string& id, std::chrono::milliseconds grace, Log& log) override {
    TNK_ASSIGN_OR_RETURN(ClusterApi * connected, api());
    return stop_k8s(paths, id, grace, cluster_, *connected, log);
  }
  Status remove_outside_state(const std::string& id, Log& log) override {
    TNK_ASSIGN_OR_RETURN(ClusterApi * connected, api());
    return delete_k8s_objects(id, cluster_, *connected, log);
  }
  Result<sandbox::StartPlan> start_plan(Context& ctx, const sandbox::Resolved& r) override {
    TNK_ASSIGN_OR_RETURN(SandboxSpec spec, sandbox_spec(ctx, r));
    sandbox::StartPlan plan;
    plan.id = r.id;
    plan.backend = to_string(r.backend);
    plan.profile = r.profile;
    plan.state = state::to_string(r.state);
    plan.objects = plan_objects(spec, cluster_.settings);
    plan.network_limits = plan_notes(spec, cluster_.settings);  // what the cluster may not give, policy included
    return plan;
  }
  std::vector<std::string> network_limits(const sandbox::Resolved& r) const override {
    if (r.network == NetworkPolicy::kNone) return {};
    return {"enforced only where the cluster's network plugin enforces NetworkPolicy (docs/k8s-backend.md)"};
  }

 private:
  // One `kubectl proxy` for everything this command asks of the cluster, started on first use.
  Result<ClusterApi*> api() {
    if (!api_) {
      TNK_ASSIGN_OR_RETURN(api_, ClusterApi::connect(cluster_.access));
    }
    return api_.get();
  }

  Cluster cluster_;
  std::unique_ptr<ClusterApi> api_;
};

}  // namespace

ClusterSettings cluster_settings(const Config& config) {
  ClusterSettings cluster;
  cluster.ns = config.k8s_namespace.value;
  cluster.runtime_class = config.k8s_runtime_class.value;
  cluster.storage_class = config.k8s_storage_class.value;
  cluster.image_registry = config.k8s_image_registry.value.value_or("");
  cluster.warm_pool = config.k8s_warm_pool.value;
  return cluster;
}

Result<SandboxSpec> sandbox_spec(Context& ctx, const sandbox::Resolved& r) {
  TNK_ASSIGN_OR_RETURN(const Config* config, ctx.config());
  TNK_ASSIGN_OR_RETURN(sandbox::ProvisionFingerprint fingerprint, sandbox::provision_fingerprint(ctx, r));
  SandboxSpec spec;
  spec.id = r.id;
  spec.project = r.project.name;
  spec.profile = r.profile;
  spec.fingerprint = fingerprint.full;
  spec.cpus = r.manifest.cpus.value_or(config->sandbox_cpus.value);
  spec.memory_bytes = r.manifest.memory_bytes.value_or(config->sandbox_memory_bytes.value);
  spec.disk_bytes = r.manifest.disk_bytes.value_or(config->sandbox_disk_bytes.value);
  spec.workdir = r.manifest.workspace_mount;
  spec.network = r.network;
  spec.allow_domains = r.manifest.allow_domains;
  spec.open_ports = r.manifest.open_ports;
  for (const auto& route : config->routes) spec.routes.push_back({route.name, route.host, route.port});
  spec.inference_upstream = r.host_inference_url;
  spec.has_api_key = config->inference_api_key_env.value || config->inference_api_key_file.value;
  spec.tnk_version = TNK_VERSION;
  return spec;
}

Cluster cluster_of(const Config& config, const std::filesystem::path& home) {
  Cluster cluster;
  cluster.settings = cluster_settings(config);
  if (config.k8s_kubeconfig.value)
    cluster.access.kubeconfig = workspace::expand_user_path(*config.k8s_kubeconfig.value, home);
  cluster.access.context = config.k8s_context.value;
  cluster.allow_runc = config.k8s_allow_runc.value;
  return cluster;
}

std::unique_ptr<sandbox::Backend> make_k8s_backend(const Config& config, const std::filesystem::path& home) {
  return std::make_unique<K8sBackend>(cluster_of(config, home));
}

}  // namespace tnk::k8s
