// What a relay process (the inference forwarder, the egress proxies, the route gateway, the port
// forwards) gives up before it reads a byte the sandbox chose: every fd but the ones it serves with,
// run by root its uid and gids (security review M6), every capability, the right to gain privileges
// (no_new_privs), and every system call a relay has no use for (a seccomp allow-list; the rest fail
// with EPERM). A bug in the HTTP or forwarding code then reaches little more than the sockets it
// already holds: not root's files, not root's processes.
#pragma once

#include <sys/types.h>

#include <optional>
#include <vector>

#include "core/result.h"

namespace tnk::supervisor {

// The ids a relay runs as when root runs the supervisor (uid and gid alike: idmap::kHelperRangeId of
// root's ranges, as QEMU's); rootless, none: the relay keeps the user's.
struct RelayAccount {
  uid_t uid = 0;
  gid_t gid = 0;
};

// Read in the supervisor before a relay forks: nullopt rootless; run by root, root's ranges' helper
// id, or an error when root has no range of its own (then the relay's id could be a user's).
Result<std::optional<RelayAccount>> relay_account();

// In the relay's child, after any setns it needs: closes every fd above 2 not in `keep`, becomes
// `account` (when given), then drops the rest. Nothing the relay does after needs a path of root's:
// its listener, its event pipe and its log (stderr) are descriptors it holds.
Status drop_relay_privileges(std::vector<int> keep, const std::optional<RelayAccount>& account);

}  // namespace tnk::supervisor
