// The vm engine's launch helpers (engine.cc applies the plan with them): what the plan needs from the host,
// the disk overlay, review mode's layer, the console's drain, QEMU's process, and the host terminal of a
// guest session.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "backend/vm/plan.h"
#include "backend/vm/processes.h"
#include "core/log_drain.h"
#include "core/result.h"
#include "core/unique_fd.h"
#include "supervisor/config.h"

namespace tnk::vm {

// A log file of the sandbox's, truncated, O_NOFOLLOW.
Result<UniqueFd> open_log(const std::filesystem::path& path);

// A host terminal for a guest session: the slave in raw mode carries the bytes to the agent (the guest's
// own pty does the line discipline), the master goes to the client.
struct HostPty {
  UniqueFd master, slave;
};
Result<HostPty> open_host_pty(unsigned short rows, unsigned short cols);

// What the plan needs from the host: the project owner's ids, the ranges, under TCG the TSC frequency,
// and whether an older tnk made the overlay (state::kBootsFromBase).
Result<vm::VmHostFacts> vm_host_facts(const supervisor::SupervisorConfig& config);

// The overlay is made once and kept across restarts: it holds what the sandbox installed. Made here, it
// gets state::kBootsFromBase; a sandbox that boots from its overlay (an older tnk's) gets a note.
Status ensure_overlay(const supervisor::SupervisorConfig& config, const vm::VmPlan& plan,
                      std::vector<std::string>& notes);

// Review mode's layer (none without review mode), its top prepared for virtiofsd's map.
Result<std::optional<ReviewDirs>> review_dirs(const supervisor::SupervisorConfig& config);

// The guest's console: QEMU connects to the socket as it starts, and a thread copies what it writes into
// serial.log, capped and rotated (security review M5: guest root could write /dev/ttyS0 without end).
Result<std::unique_ptr<LogDrain>> drain_console(const vm::VmFiles& files);

// One virtiofsd: the project's, or a linked worktree's git dir's, with `protected_paths` read-only, in the
// sandbox's cgroups (`cgroup_procs`).
Result<pid_t> launch_virtiofsd(const vm::VirtiofsdPlan& plan, const vm::VirtiofsdConfig& config,
                               const std::filesystem::path& dir, const std::vector<std::string>& protected_paths,
                               const std::optional<ReviewDirs>& review, const std::filesystem::path& log_file,
                               const std::vector<int>& cgroup_procs);

// QEMU as launched: its pid, the network namespace the relays listen in and the user namespace that owns
// it (rootless: QEMU's own; as root: the host's), and the console's drain.
struct LaunchedQemu {
  pid_t pid = 0;
  UniqueFd netns, userns;
  std::unique_ptr<LogDrain> console;
};

// Starts QEMU in the sandbox's cgroups (`cgroup_procs`). Fills `out` as far as it got, so that the caller
// stops what started even when a later step fails.
Status launch_qemu(const vm::VmPlan& plan, const std::vector<int>& cgroup_procs, LaunchedQemu& out);

}  // namespace tnk::vm
