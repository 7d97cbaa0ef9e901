// The seccomp program that keeps the agent from making set-user-id or set-group-id files: chmod and
// file creation with S_ISUID or S_ISGID in the mode are refused with EPERM. The agent owns the project,
// and a setuid file it leaves there runs as the user when anyone on the host executes it. Loaded into
// agent sessions on both backends (ns: after the sandbox's own filter; vm: by the guest agent), never
// into provisioning, whose package manager installs setuid programs into the sandbox's own tree.
#pragma once

#include <linux/filter.h>

#include <vector>

namespace tnk::confine {

// Native architecture only; any other ABI (i386, x32) is killed, since its call numbers differ and the
// checks would not see its calls. io_uring is refused (EPERM): its operations open files outside any
// filter's view. openat2 gets ENOSYS: its mode sits in memory seccomp cannot read, and callers fall
// back to openat.
std::vector<sock_filter> setid_mode_filter();

// Loads `program` into the calling thread: 0, or -1 with errno. Async-signal-safe (for after fork).
// Needs no_new_privs, or CAP_SYS_ADMIN in the current user namespace.
int load_seccomp_program(const std::vector<sock_filter>& program);

}  // namespace tnk::confine
