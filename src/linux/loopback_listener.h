// A TCP socket listening on 127.0.0.1 inside another network namespace, or a unix socket in another mount
// namespace: how the supervisor listens
// where a sandbox connects (an ns sandbox's own network namespace, a vm's QEMU's) while it stays outside.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::linux {

// Listening on 127.0.0.1:port (O_CLOEXEC|O_NONBLOCK) in the network namespace `netns_fd`, joined through
// the user namespace `userns_fd` that owns it (-1: the namespace belongs to the caller's own user
// namespace, as QEMU's does when root runs a vm). `where` ends the error's first words: "listening on
// 127.0.0.1:3128 <where>".
Result<UniqueFd> listen_loopback_in(int userns_fd, int netns_fd, uint16_t port, const std::string& where);

// A unix socket listening (O_CLOEXEC|O_NONBLOCK) at `path` in the mount namespace `mntns_fd`, made by the
// root of the user namespace `userns_fd` that owns it, open to every user there (0666; its directory is
// made 0755): the SSH agent socket an ns sandbox's sessions get. Unix sockets are reached by path, not
// through a network namespace, so the caller accepts connections from inside while it stays outside.
Result<UniqueFd> listen_unix_in(int userns_fd, int mntns_fd, const std::string& path, const std::string& where);

}  // namespace tnk::linux
