// A sandbox's namespaces, made before any of its processes exists: a holder process creates the user
// namespace, waits while its maps are written (directly by root, through newuidmap/newgidmap by an
// ordinary user), creates the others from inside it, and is killed once every namespace is open here.
// The caller keeps the fds for the sandbox's life: everything that later joins the sandbox (PID 1,
// the joiner, the listen helpers) setns()s into them. Opening /proc/<PID 1>/ns/* instead would need
// ptrace access to PID 1, which an ordinary user lacks (PID 1 runs as the range's root, not dumpable).
#pragma once

#include <sys/types.h>

#include <array>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"
#include "idmap/userns.h"

namespace tnk::ns {

// The order every joiner follows: user first (it gives the capabilities the others need), then mnt.
enum NsIndex : size_t { kUserNs, kMntNs, kPidNs, kNetNs, kIpcNs, kUtsNs, kCgroupNs, kNsCount };

struct Namespaces {
  std::array<UniqueFd, kNsCount> fds;
  // The user namespace root sessions join, nested in the sandbox's and mapping every id of it but
  // `agent`'s (rootless: the user; run as root: the project's owner through its idmapped mount). Root
  // inside may change the sandbox's system there, but agent's files (the project) are not its to
  // override, chown or remove: a capability counts only on files whose owner the namespace maps.
  UniqueFd root_session_user;
  int fd(NsIndex i) const { return fds[i].get(); }
};

// The CLONE_NEW* flag of each index.
int ns_clone_flag(NsIndex index);

// Every namespace but the pid namespace, whose handle can only be opened once it has a first process:
// start() opens it from the setup child, which makes it (init.h). The holder joins the cgroups behind
// `cgroup_procs_fds` first, so that the cgroup namespace is rooted at the sandbox's own cgroup.
Result<Namespaces> create_namespaces(const idmap::UsernsMaps& maps, const std::vector<int>& cgroup_procs_fds);

}  // namespace tnk::ns
