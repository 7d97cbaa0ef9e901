// The k8s backend behind sandbox::Backend. It plans and does not run yet: `tnk sandbox start --backend k8s
// --dry-run` prints the objects (plan.h); every verb that would touch a cluster fails with one message
// (kNoRunner) and exit 1, rather than pretend.
#pragma once

#include <memory>

#include "backend/k8s/plan.h"
#include "context/context.h"
#include "core/result.h"
#include "sandbox/backend.h"
#include "sandbox/resolve.h"

namespace tnk::k8s {

inline constexpr const char* kNoRunner =
    "the k8s backend only plans so far: tnk cannot create, run or stop sandboxes on a cluster yet";
inline constexpr const char* kNoRunnerHint =
    "`tnk sandbox start --backend k8s --dry-run -o yaml` prints the objects, for `kubectl apply -f -` "
    "(docs/k8s-backend.md)";

// The plan's inputs from the resolved sandbox, tnk.toml and the profile's fingerprint (which reads the
// profile's files): the impure half of the dry run.
Result<SandboxSpec> sandbox_spec(Context& ctx, const sandbox::Resolved& resolved);
ClusterSettings cluster_settings(const Config& config);

std::unique_ptr<sandbox::Backend> make_k8s_backend();

}  // namespace tnk::k8s
