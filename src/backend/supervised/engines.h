// The engine a supervisor runs for its sandbox's backend: what `tnk __supervise` is handed
// (main.cc), so that the supervisor itself knows no backend by name.
#pragma once

#include <memory>

#include "core/result.h"
#include "supervisor/engine.h"

namespace tnk::supervised {

Result<std::unique_ptr<supervisor::Engine>> make_engine(const supervisor::SupervisorConfig& config);

}  // namespace tnk::supervised
