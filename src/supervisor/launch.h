// Starting a sandbox's supervisor from the command line: `tnk` re-executed in its hidden
// supervisor mode, detached (its own session, stdio to supervisor.log), reporting on a pipe
// once the sandbox is ready or why it could not start.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <sys/types.h>

#include "core/result.h"
#include "supervisor/config.h"

namespace tnk::supervisor {

// The hidden argv[1] that makes `tnk` a supervisor. Short on purpose: a sandbox's PID 1 is forked
// from the supervisor and shows this command line inside the sandbox, so it names no host path.
inline constexpr const char* kSuperviseArg = "__supervise";
inline constexpr int kConfigFd = 3;  // the supervisor reads its SupervisorConfig (JSON) here
inline constexpr int kReadyFd = 4;   // and writes one JSON line here: {"ok":true,...} or the error
// Started through systemd-run (config.cgroup_scope): tnk's own binary, opened O_PATH, which systemd-run
// executes as /proc/self/fd/5; the supervisor then executes itself again as "tnk" (reexec_as_tnk), so
// that its command line, which the sandbox's PID 1 shows, names no path, and closes it.
inline constexpr int kSelfFd = 5;

struct Launched {
  pid_t pid = 0;
  std::vector<std::string> notes;  // what the sandbox could not apply (e.g. resource limits)
};

// Returns once the supervisor reports the sandbox ready, or with its error (and the tail of its log).
Result<Launched> launch_supervisor(const SupervisorConfig& config, std::chrono::milliseconds timeout);

}  // namespace tnk::supervisor
