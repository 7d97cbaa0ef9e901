// The ns engine the supervisor of a ns sandbox runs (supervisor/engine.h).
#pragma once

#include <memory>

#include "core/result.h"
#include "supervisor/engine.h"

namespace tnk::supervisor {

Result<std::unique_ptr<Engine>> make_ns_engine(const SupervisorConfig& config);

}  // namespace tnk::supervisor
