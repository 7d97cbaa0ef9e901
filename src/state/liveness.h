// Whether a sandbox's processes are alive, read from the pid files in its directory: "<pid>
// <start time>" so that a reused pid is not mistaken for ours. This, not the record, is the truth.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "core/file_lock.h"
#include "core/result.h"
#include "state/store.h"

namespace tnk::state {

enum class SandboxState {
  kAbsent,   // no record
  kStopped,  // a record, no live process, no leftover pid file
  kRunning,  // its supervisor (or qemu) is alive
  kBroken,   // a pid file names a dead process (killed, crashed), the supervisor left a failure.txt, or the
             // record is unreadable
};
std::string to_string(SandboxState state);

struct PidRecord {
  pid_t pid = 0;
  unsigned long long start_time = 0;  // field 22 of /proc/<pid>/stat (clock ticks since boot)
};

// The start time of a live process, nullopt when there is none with that pid or it is a zombie.
std::optional<unsigned long long> process_start_time(pid_t pid);
std::string format_pid_record(const PidRecord& record);
std::optional<PidRecord> parse_pid_record(const std::string& text);

// The live processes a sandbox's pid files name (supervisor, qemu). EPERM counts as alive: a
// process of another user is not ours to call dead (the original's bug 10).
std::vector<pid_t> live_sandbox_pids(const Store& store, const std::string& id);

// The state of a sandbox that has a record, from its processes.
SandboxState observe(const Store& store, const std::string& id);

// The supervisor's flock on supervisor.lock in `state_dir`, taken first and held until it exits, so that
// a sandbox never has two supervisors whatever the timing of the starts: one launched beside a live one
// (which a start could not see: still booting, or ending, without a pid file) waits `wait` and refuses.
// O_CLOEXEC: the programs it executes (QEMU, virtiofsd, sessions) do not hold it.
Result<FileLock> claim_supervisor(const std::filesystem::path& state_dir, std::chrono::milliseconds wait);

// Whether a supervisor holds supervisor.lock: alive, whether or not its pid file names it yet (or still).
Result<bool> supervisor_alive(const Store& store, const std::string& id);

}  // namespace tnk::state
