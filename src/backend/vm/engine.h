// The vm engine the supervisor of a vm sandbox runs (supervisor/engine.h).
#pragma once

#include <memory>

#include "core/result.h"
#include "supervisor/engine.h"

namespace tnk::vm {

Result<std::unique_ptr<supervisor::Engine>> make_vm_engine(const supervisor::SupervisorConfig& config);

}  // namespace tnk::vm
