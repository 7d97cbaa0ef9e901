// The registry of backends: opens the one a sandbox needs, and resolves a sandbox together with
// its state as that backend sees it. The only place that knows which backends this build has.
// Every backend keeps one contract: docs/architecture.md, "The contract every backend keeps".
#pragma once

#include <memory>

#include "context/context.h"
#include "core/result.h"
#include "naming/backend_kind.h"
#include "sandbox/backend.h"
#include "sandbox/resolve.h"

namespace tnk::backend {

// The backend of `kind` (not kAuto: resolve it first). A clear error when this build lacks it. k8s reads
// its cluster from the configuration.
Result<std::unique_ptr<sandbox::Backend>> open_backend(Context& ctx, BackendKind kind);

// sandbox::resolve, then whether the sandbox runs, asked of its backend (a note says so when the
// backend could not tell).
Result<sandbox::Resolved> resolve(Context& ctx, const sandbox::ResolveOptions& options);

}  // namespace tnk::backend
