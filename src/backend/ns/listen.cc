// The sandbox's network namespace from the supervisor's side: listening on 127.0.0.1 inside it
// (linux/loopback_listener.h), and a relay moving into it; and a unix socket in its mount namespace.
#include <sched.h>
#include <unistd.h>

#include <cerrno>

#include "backend/ns/sandbox.h"
#include "linux/loopback_listener.h"

namespace tnk::ns {

// Rootless, the network namespace belongs to the sandbox's user namespace: joining that first gives the
// right to join it. Run by root it is not joined: root's capabilities reach the network namespace from
// outside, and a relay's ids stay the host's, which it then drops to (relay_drops.h), never ids of the
// sandbox's map.
Status enter_network(const Sandbox& sandbox) {
  if ((geteuid() != 0 && setns(sandbox.namespaces.fd(kUserNs), CLONE_NEWUSER) != 0) ||
      setns(sandbox.namespaces.fd(kNetNs), CLONE_NEWNET) != 0) {
    return sys_error(errno, "joining the sandbox's network namespace");
  }
  return ok_status();
}

Result<UniqueFd> listen_inside(const Sandbox& sandbox, uint16_t port) {
  return linux::listen_loopback_in(sandbox.namespaces.fd(kUserNs), sandbox.namespaces.fd(kNetNs), port,
                                   "inside the sandbox");
}

Result<UniqueFd> listen_unix_inside(const Sandbox& sandbox, const std::string& path) {
  return linux::listen_unix_in(sandbox.namespaces.fd(kUserNs), sandbox.namespaces.fd(kMntNs), path,
                               "inside the sandbox");
}

}  // namespace tnk::ns
