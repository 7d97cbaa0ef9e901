// The k8s backend behind sandbox::Backend: `tnk sandbox start --backend k8s --dry-run` prints the objects
// (plan.h); start, stop, delete and the state come from the cluster (runner.h). Sessions, provisioning and
// the upload of the working copy are not built yet: they fail with one message (kNoSessions) and exit 1.
#pragma once

#include <memory>

#include "backend/k8s/plan.h"
#include "backend/k8s/runner.h"
#include "context/context.h"
#include "core/result.h"
#include "sandbox/backend.h"
#include "sandbox/resolve.h"

namespace tnk::k8s {

inline constexpr const char* kNoSessions =
    "sessions on the k8s backend are not built yet: tnk can create, stop and delete a sandbox on a cluster, "
    "but not run a command in it";
inline constexpr const char* kNoSessionsHint =
    "docs/k8s-backend.md says what the runner does so far; use --backend ns or vm to run commands";

// The plan's inputs from the resolved sandbox, tnk.toml and the profile's fingerprint (which reads the
// profile's files): the impure half of the dry run.
Result<SandboxSpec> sandbox_spec(Context& ctx, const sandbox::Resolved& resolved);
ClusterSettings cluster_settings(const Config& config);
Cluster cluster_of(const Config& config, const std::filesystem::path& home);

std::unique_ptr<sandbox::Backend> make_k8s_backend(const Config& config, const std::filesystem::path& home);

}  // namespace tnk::k8s
