// The sandbox's seccomp filter, loaded in every session before exec. It allows the system calls of
// Linux 6.1 but EPERM for those that reach kernel surface a sandbox never needs (keys, bpf, modules,
// mounts, namespaces, ...), and answers ENOSYS to any newer one.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "core/result.h"

namespace tnk::ns {

// The filter as a BPF program for the native architecture (libseccomp; other ABIs are killed, x32
// calls answer ENOSYS), with a hand-written check in front for what libseccomp cannot express: calls
// newer than the filter, and personality(2)'s values.
Result<std::vector<sock_filter>> build_seccomp_filter();
// Loaded with confine::load_seccomp_program.

// The syscalls refused with EPERM outright (names as libseccomp knows them; unknown ones are skipped).
const std::vector<const char*>& seccomp_denied_syscalls();

}  // namespace tnk::ns
