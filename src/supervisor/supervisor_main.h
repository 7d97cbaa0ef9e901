// The hidden `tnk __supervise <id>` mode: one process per running sandbox (docs/architecture.md,
// "Processes"). Started only by launch_supervisor(), never by a user.
#pragma once

#include "supervisor/engine.h"

namespace tnk::supervisor {

int supervisor_main(const EngineFactory& make_engine);

// Started by systemd-run (launch.h, kSelfFd), the supervisor's argv[0] is /proc/self/fd/5, which the
// sandbox's PID 1, forked from it, would show inside. Executes tnk again from /proc/self/exe with
// argv[0] "tnk" (the config and ready descriptors stay; fd 5 is closed). Returns only when that
// fails, with the exit status to use.
int reexec_as_tnk(char** argv);

}  // namespace tnk::supervisor
