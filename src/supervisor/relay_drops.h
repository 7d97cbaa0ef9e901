// What a relay process (the inference forwarder, the egress proxies, the port forwards) gives up
// before it reads a byte the sandbox chose: every fd but the ones it serves with, every capability,
// the right to gain privileges (no_new_privs), and every system call a relay has no use for (a
// seccomp allow-list; the rest fail with EPERM). A bug in the HTTP or forwarding code then reaches
// little more than the sockets it already holds.
#pragma once

#include <vector>

#include "core/result.h"

namespace tnk::supervisor {

// In the relay's child, after any setns it needs: closes every fd above 2 not in `keep`, then drops.
Status drop_relay_privileges(std::vector<int> keep);

}  // namespace tnk::supervisor
