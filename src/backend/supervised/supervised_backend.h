// The ns and vm backends behind sandbox::Backend: one implementation, since both run each sandbox
// through its own supervisor process; they differ in the engine that supervisor runs (engines.h).
#pragma once

#include <memory>

#include "naming/backend_kind.h"
#include "sandbox/backend.h"

namespace tnk::supervised {

// `kind` is kNs or kVm.
std::unique_ptr<sandbox::Backend> make_supervised_backend(BackendKind kind);

}  // namespace tnk::supervised
