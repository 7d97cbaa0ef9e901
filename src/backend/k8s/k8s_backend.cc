#include "backend/k8s/k8s_backend.h"

#include "config/config.h"
#include "sandbox/provision.h"

namespace tnk::k8s {
namespace {

Error no_runner() { return failed(kNoRunner, kNoRunnerHint); }

class K8sBackend final : public sandbox::Backend {
 public:
  BackendKind kind() const override { return BackendKind::kK8s; }
  sandbox::Capabilities capabilities() const override { return {}; }

  // No k8s sandbox was ever started (ensure_running refuses), so none runs.
  sandbox::Observed observe(const Paths&, const std::string&) override { return {}; }
  Result<sandbox::StartOutcome> ensure_running(Context&, const sandbox::Resolved&,
                                               const std::filesystem::path&) override {
    return no_runner();
  }
  Status provision_if_needed(Context&, const sandbox::Resolved&, const sandbox::ProvisionRequest&,
                             std::optional<audit::AuditWriter>&) override {
    return no_runner();
  }
  Result<int> run_session(Context&, const sandbox::Resolved&, const sandbox::SessionSpec&,
                          std::optional<audit::AuditWriter>&) override {
    return no_runner();
  }
  Status stop(const Paths&, const std::string&, std::chrono::milliseconds, Log&) override { return no_runner(); }
  Status remove_outside_state(const std::string&, Log&) override { return no_runner(); }
  Result<sandbox::StartPlan> start_plan(Context& ctx, const sandbox::Resolved& r) override {
    TNK_ASSIGN_OR_RETURN(const Config* config, ctx.config());
    TNK_ASSIGN_OR_RETURN(SandboxSpec spec, sandbox_spec(ctx, r));
    ClusterSettings cluster = cluster_settings(*config);
    sandbox::StartPlan plan;
    plan.id = r.id;
    plan.backend = to_string(r.backend);
    plan.profile = r.profile;
    plan.state = state::to_string(r.state);
    plan.objects = plan_objects(spec, cluster);
    plan.network_limits = plan_notes(spec, cluster);  // what the cluster may not give, policy included
    return plan;
  }
  std::vector<std::string> network_limits(const sandbox::Resolved& r) const override {
    if (r.network == NetworkPolicy::kNone) return {};
    return {"enforced only where the cluster's network plugin enforces NetworkPolicy (docs/k8s-backend.md)"};
  }
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

std::unique_ptr<sandbox::Backend> make_k8s_backend() { return std::make_unique<K8sBackend>(); }

}  // namespace tnk::k8s
