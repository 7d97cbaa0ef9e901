// The identity a session runs as. A session starts as mapped root with every capability of the sandbox's
// user namespace; this drops to the identity and loads seccomp, just before exec (after fork: system
// calls only). What each identity keeps is documented on apply_identity below.
#pragma once

#include <linux/filter.h>

#include <cstdint>
#include <vector>

#include "backend/ns/sandbox.h"
#include "backend/ns/steps.h"
#include "core/result.h"
#include "session/messages.h"

namespace tnk::ns {

// Docker's default capability set: CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP
// NET_BIND_SERVICE NET_RAW SYS_CHROOT MKNOD AUDIT_WRITE SETFCAP (0xa80425fb). All are capabilities of the
// sandbox's user namespace only: they act on the sandbox's own files and processes.
uint64_t docker_default_capabilities();

struct CredentialPlan {
  session::Identity identity = session::Identity::kAgent;
  int last_cap = 40;                                       // /proc/sys/kernel/cap_last_cap, read before fork
  const std::vector<sock_filter>* seccomp = nullptr;       // the filter to load
  const std::vector<sock_filter>* setid_filter = nullptr;  // kAgent's second: confine::setid_mode_filter
  int root_session_userns = -1;                            // Namespaces::root_session_user
};

// kAgent: uid/gid 1000, no supplementary groups, every capability set empty, no_new_privs, seccomp and
//   the set-id mode filter (the agent owns the project: no setuid file of the user's there).
// kRoot: uid 0 inside with Docker's default capabilities, no_new_privs, seccomp, in the root sessions'
//   own user namespace (Namespaces::root_session_user), which does not map agent.
StepError apply_identity(const CredentialPlan& plan);

// RLIMIT_CORE 0 (no core files in the project) and a sane RLIMIT_NOFILE (1024 soft, at most 524288 hard).
StepError apply_rlimits();

// /proc/sys/kernel/cap_last_cap.
Result<int> read_last_cap();

}  // namespace tnk::ns
