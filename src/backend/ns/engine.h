// The ns engine the supervisor of a ns sandbox runs (supervisor/engine.h).
#pragma once

#include <memory>

#include "core/result.h"
#include "supervisor/engine.h"

namespace tnk::ns {

Result<std::unique_ptr<supervisor::Engine>> make_ns_engine(const supervisor::SupervisorConfig& config);

}  // namespace tnk::ns
