// What start() accepts (spec validation) and what it says when a step in a forked child failed: the
// children only know {step, errno}; these functions add the operation, the object and a hint.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "backend/ns/sandbox.h"
#include "backend/ns/steps.h"
#include "core/result.h"
#include "linux/syscalls.h"

namespace tnk::ns {

Status validate_spec(const SandboxSpec& spec);
Status validate_cgroup_name(const std::string& name);
// An absolute, normalized path inside the sandbox that may carry the project (not /, /proc, /dev, /sys).
Status validate_mount_point(const std::string& mount_point);

struct StartOutcome {
  pid_t init_pid = 0;  // 0 when PID 1 was never created
  bool ready = false;
  Error error;  // empty message: no failure reported
  std::vector<std::string> notes;
};

StartOutcome interpret_start_reports(const std::vector<linux::sys::Report>& reports, const SandboxSpec& spec);

// The error for a failed step of the setup child or PID 1.
Error start_step_error(Step step, int err, int32_t value, const SandboxSpec& spec);

}  // namespace tnk::ns
