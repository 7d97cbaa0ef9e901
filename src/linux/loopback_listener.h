// A TCP socket listening on 127.0.0.1 inside another network namespace: how the supervisor listens
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

}  // namespace tnk::linux
