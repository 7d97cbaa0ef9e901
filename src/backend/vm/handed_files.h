// Run by root, QEMU runs as an id of root's range that cannot walk to the state directory or the image
// cache (security review H1): the supervisor opens what QEMU's command line names by number
// (vm::handed_fd) and hands it over. Every descriptor here is O_CLOEXEC; only QEMU's child copies them
// to their numbers (processes.h, UnprivilegedQemu).
#pragma once

#include <sys/types.h>

#include <optional>
#include <utility>
#include <vector>

#include "backend/vm/plan.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::vm {

// The descriptors plan.qemu (handed_files set) names, each with its number in QEMU appended to
// `numbers`: the monitors' and the agent's listening sockets, made at their usual paths (the supervisor
// connects there as before); the console's and the virtiofsd sockets, connected (their listeners must
// exist); the overlay read-write and read-only, its pinned backing file (base.img beside it, whatever
// its header names) and the kernel, read-only.
Result<std::vector<UniqueFd>> open_handed_files(const vm::VmPlan& plan, std::vector<std::pair<int, int>>& numbers);

// Under KVM, the group of /dev/kvm, which QEMU's account needs as a supplementary group; none when
// /dev/kvm is missing or root's group (which QEMU is never given).
std::optional<gid_t> kvm_group(bool kvm);

}  // namespace tnk::vm
