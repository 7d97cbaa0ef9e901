// The hidden `tnk __supervise <id>` mode: one process per running sandbox (docs/architecture.md,
// "Processes"). Started only by launch_supervisor(), never by a user.
#pragma once

#include "supervisor/engine.h"

namespace tnk::supervisor {

int supervisor_main(const EngineFactory& make_engine);

}  // namespace tnk::supervisor
