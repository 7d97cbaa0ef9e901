// PID 1's mount work: the overlay root (idmapped image lower + persistent upper), /dev, /proc, /sys, the
// tmpfs mounts, the generated /etc files, the project, then pivot_root. Runs after fork (system calls only).
#pragma once

#include "backend/ns/init.h"
#include "backend/ns/steps.h"

namespace tnk::ns {

// Builds the root and pivots into it. Non-fatal problems are sent to plan.report_fd as notes.
StepError build_root(const InitPlan& plan, const OpenedDirs& dirs);

// Opens (with `create`: making missing directories with `mode`) the directory `rel` below `root` one
// component at a time, never following a symlink. Returns an O_PATH fd, or -1 with errno.
int open_dirs_below(int root, const char* rel, bool create, unsigned mode);

}  // namespace tnk::ns
