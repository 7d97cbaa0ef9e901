// The SSH agent's check of a session-bind (net/ssh_agent_filter.h): is a signature the host key's over
// the session identifier? Ed25519 host keys only (ssh-ed25519), through OpenSSL (openssl_library.h);
// any other key type fails the check, so a route names an Ed25519 host key (docs/network.md).
#pragma once

#include <string_view>

namespace tnk::supervisor {

// True when `signature` (string "ssh-ed25519", string 64 bytes) is `host_key`'s (string "ssh-ed25519",
// string 32 bytes) over `data`. False for anything malformed, another key type, or no OpenSSL.
bool verify_host_signature(std::string_view host_key, std::string_view signature, std::string_view data);

}  // namespace tnk::supervisor
