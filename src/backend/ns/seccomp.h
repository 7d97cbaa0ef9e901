// The sandbox's seccomp filter, loaded in every session before exec. Default allow; EPERM for the calls
// that reach kernel surface a sandbox never needs (keys, bpf, modules, mounts, namespaces, ...).
#pragma once

#include <linux/filter.h>

#include <vector>

#include "core/result.h"

namespace tnk::ns {

// The filter as a BPF program for the native architecture (libseccomp; other ABIs, x32 included, are
// killed), with a hand-written personality(2) check in front, which libseccomp cannot express.
Result<std::vector<sock_filter>> build_seccomp_filter();

// Loads `program` into the calling thread: 0, or -1 with errno. Async-signal-safe (for after fork).
// Needs no_new_privs, or CAP_SYS_ADMIN in the current user namespace.
int load_seccomp_filter(const std::vector<sock_filter>& program);

// The syscalls refused with EPERM outright (names as libseccomp knows them; unknown ones are skipped).
const std::vector<const char*>& seccomp_denied_syscalls();

}  // namespace tnk::ns
