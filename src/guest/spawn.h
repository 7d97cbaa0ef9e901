// Starting one session's program inside the guest (tnk-agent side): fork, then in the child a new
// session (setsid), the terminal or pipes as stdio, the requested groups/gid/uid, the cwd, and exec
// with exactly the requested environment (argv[0] is looked up in that environment's PATH). No shell.
#pragma once

#include <sys/types.h>

#include "agent/messages.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::guest {

struct SpawnedProcess {
  pid_t pid = 0;  // also its process group and session id
  // Pipe mode: the agent's ends, non-blocking and close-on-exec.
  UniqueFd stdin_w, stdout_r, stderr_r;
  // Tty mode: the PTY master (non-blocking, close-on-exec), the child's controlling terminal.
  UniqueFd pty_master;
};

// A program that cannot start is an error whose kind tells the exit code: kNotFound (127) when exec
// found no such program, kFailed (126) for every other step (the message names the step and errno).
// The failed child has been reaped when this returns.
Result<SpawnedProcess> spawn_session(const agent::ExecRequest& request);

// The shell's exit code for a failure of spawn_session: 127 or 126.
int spawn_failure_code(const Error& error);

}  // namespace tnk::guest
