// Holding every process of a sandbox still for a moment (a checkpoint's copy of its files), and letting
// them go on. By the cgroup freezer where the sandbox has one of its own (v2's cgroup.freeze, v1's
// freezer controller), else by SIGSTOP to each process of its pid namespace, which a process can notice
// (SIGCONT wakes what stopped itself too): docs/checkpoints.md says so.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/result.h"

namespace tnk::linux {

struct Frozen {
  std::filesystem::path cgroup_file;  // the freezer file written, or empty: stopped by signal
  std::vector<pid_t> stopped;         // by signal: the processes to continue
  std::string how;                    // "cgroup v2 freezer", "cgroup v1 freezer", "SIGSTOP"
};

// Freezes the sandbox whose PID 1 is `init_pid` (a process of the caller's pid namespace), its cgroups
// `cgroup_dirs` (linux::process_cgroup_dirs). Waits until the kernel says every process is frozen
// (at most 5 s, then thaws and fails).
Result<Frozen> freeze_sandbox(pid_t init_pid, const std::vector<std::filesystem::path>& cgroup_dirs);

// Lets them run again. Best effort: a process that ended meanwhile is no error.
Status thaw_sandbox(const Frozen& frozen);

}  // namespace tnk::linux
