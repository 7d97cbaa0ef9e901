// The hidden `tnk __supervise <id>` mode: one process per running sandbox (ARCHITECTURE.md,
// "Processes"). Started only by launch_supervisor(), never by a user.
#pragma once

namespace tnk::supervisor {

int supervisor_main();

}  // namespace tnk::supervisor
