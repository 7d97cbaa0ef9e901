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
// Loaded with confine::load_seccomp_program.

// The syscalls refused with EPERM outright (names as libseccomp knows them; unknown ones are skipped).
const std::vector<const char*>& seccomp_denied_syscalls();

}  // namespace tnk::ns
