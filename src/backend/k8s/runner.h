// The k8s backend's runner: a sandbox's objects (plan.h) created on a cluster through its API (api.h),
// stopped by suspending the Sandbox (its claims kept), and deleted with its claims. Whether a k8s sandbox
// runs is the cluster's to say: its Sandbox's operatingMode and Ready condition. tnk keeps only its record.
// Sessions through the supervisor's channel are not built yet (docs/k8s-backend.md).
#pragma once

#include <chrono>
#include <string>

#include "backend/k8s/api.h"
#include "backend/k8s/plan.h"
#include "context/context.h"
#include "core/result.h"
#include "sandbox/backend.h"
#include "sandbox/resolve.h"
#include "sandbox/start.h"

namespace tnk::k8s {

// tnk.toml's [k8s], for the runner.
struct Cluster {
  ClusterSettings settings;
  KubeAccess access;
  bool allow_runc = false;  // k8s.allow_runc: run the agent in a plain container (the cluster's default runtime)
};

// The state of a sandbox from its Sandbox object (nullopt: the cluster has none).
state::SandboxState sandbox_state(const std::optional<nlohmann::json>& sandbox);

// Refuses an agent pod that would run as a plain container: no k8s.runtime_class, or one whose handler is
// runc, unless k8s.allow_runc; and a runtime class the cluster does not have.
Status check_runtime_class(ClusterApi& api, const Cluster& cluster);

// Creates the objects on first use (a failure removes what this start created), resumes a suspended
// Sandbox, and returns once the Sandbox is Ready and the supervisor's pod runs.
Result<sandbox::StartOutcome> ensure_running_k8s(Context& ctx, const sandbox::Resolved& resolved,
                                                 const Cluster& cluster, ClusterApi& api);

// operatingMode Suspended (the cluster removes the agent's pod, the claims stay), the supervisor's pod
// removed; waits up to `grace` (and 30 s more) for the agent's pod to go.
Status stop_k8s(const Paths& paths, const std::string& id, std::chrono::milliseconds grace, const Cluster& cluster,
                ClusterApi& api, Log& log);

// Deletes the sandbox's own objects and its claims (resources.h); the template stays for other sandboxes.
Status delete_k8s_objects(const std::string& id, const Cluster& cluster, ClusterApi& api, Log& log);

}  // namespace tnk::k8s
