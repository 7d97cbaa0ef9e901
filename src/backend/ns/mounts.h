// PID 1's mount work: the overlay root (idmapped image lower + persistent upper), /dev, /proc, /sys, the
// tmpfs mounts, the generated /etc files, the project, then pivot_root. Runs after fork (system calls only).
#pragma once

#include "backend/ns/init.h"
#include "backend/ns/steps.h"

namespace tnk::ns {

// Builds the root and pivots into it. Non-fatal problems are sent to plan.report_fd as notes.
StepError build_root(const InitPlan& plan, const OpenedDirs& dirs);

}  // namespace tnk::ns
