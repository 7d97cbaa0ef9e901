// The control protocol between `tnk` and a sandbox's supervisor (docs/control-protocol.md): one JSON
// object per AF_UNIX SOCK_SEQPACKET message, with up to kMaxFds descriptors passed by SCM_RIGHTS.
// This file owns the framing and the socket set-up; both sides (client and supervisor) use it.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/unique_fd.h"
#include "session/messages.h"

namespace tnk::session {

inline constexpr std::size_t kMaxMessageBytes = 64 * 1024;
inline constexpr std::size_t kMaxFds = 4;
// kProtocolVersion is in messages.h (the version check lives there).

struct Message {
  nlohmann::json body;        // always a JSON object
  std::vector<UniqueFd> fds;  // received with O_CLOEXEC; owned by the message
};

// Sends `body` (an object, at most kMaxMessageBytes once serialized) and `fds` (at most kMaxFds) as one
// message. Never raises SIGPIPE (MSG_NOSIGNAL): a closed peer is an EPIPE error.
Status send_message(int sock, const nlohmann::json& body, std::span<const int> fds = {});

// Receives one message. nullopt on orderly EOF. A truncated message (too big, or more than kMaxFds
// descriptors), bad JSON or a non-object is an error, and any descriptors that came with it are closed.
Result<std::optional<Message>> recv_message(int sock);

// As recv_message, but gives up when nothing arrives before `deadline` (an error with sys_errno ETIMEDOUT).
Result<std::optional<Message>> recv_message_until(int sock, std::chrono::steady_clock::time_point deadline);

// Binds and listens on `path` (mode 0600, CLOEXEC). A stale socket file (nobody listening) is removed;
// a live one, or a path that is not a socket, is refused.
Result<UniqueFd> listen_control(const std::filesystem::path& path);

// Connects to the control socket at `path`. ENOENT/ECONNREFUSED -> a not_found error "no supervisor is
// listening on <path>"; the caller adds the sandbox's name as context. A non-zero `timeout` bounds the
// wait when the supervisor's backlog is full.
Result<UniqueFd> connect_control(const std::filesystem::path& path,
                                 std::chrono::milliseconds timeout = std::chrono::milliseconds{0});

// Accepts one connection on a listening control socket (CLOEXEC), retrying on EINTR.
Result<UniqueFd> accept_control(int listen_fd);

}  // namespace tnk::session
