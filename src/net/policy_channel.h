// The channel on which a sandbox's supervisor replaces its running proxy's lists: a SOCK_SEQPACKET
// socket pair, one message {"allow":[...],"deny":[...]} per replacement, answered {"cut":N} once the
// lists are in force (so the supervisor's answer to `tnk sandbox allow` comes after the change, never
// before) and the connections they no longer allow are cut.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"
#include "net/live_allow.h"

namespace tnk::net {

struct PolicyChannel {
  UniqueFd supervisor_end, proxy_end;
};
Result<PolicyChannel> open_policy_channel();

// The supervisor's side: sends the lists and waits for the proxy's answer; returns how many
// connections were cut.
Result<std::size_t> send_policy(int fd, const std::vector<std::string>& allow, const std::vector<std::string>& deny,
                                std::chrono::milliseconds timeout);

// The proxy's side, on a thread of its own: applies each message to `live` until `stop_fd` is
// readable or the supervisor closes its end.
void serve_policy_channel(int fd, LiveAllowList& live, int stop_fd);

}  // namespace tnk::net
