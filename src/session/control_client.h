// One-shot control requests to a sandbox's supervisor (ping, stop, network, agent-ping), on the framing of
// sessions.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::session {

// Asks the supervisor whether it is alive. Returns the pong event ({"event":"pong","v":1,"backend":...,
// "pid":N}, fields checked). Not running -> the not_found error of connect_control; no answer within
// `timeout` (connect included) -> a failed error.
Result<nlohmann::json> ping(const std::filesystem::path& ctl_sock, std::chrono::milliseconds timeout);

// Asks the supervisor to stop the sandbox (its processes get SIGTERM, then SIGKILL after `grace`) and waits
// until it closes the connection, which it does once the sandbox is stopped. `timeout` bounds the whole
// exchange and should exceed `grace`.
Status request_stop(const std::filesystem::path& ctl_sock, std::chrono::milliseconds grace,
                    std::chrono::milliseconds timeout);

// A network op ({"op":"network"} or {"op":"forward",...}: docs/control-protocol.md); returns the
// supervisor's description of the sandbox's network after it. Errors keep the supervisor's kind.
Result<nlohmann::json> request_network(const std::filesystem::path& ctl_sock, const nlohmann::json& op,
                                       std::chrono::milliseconds timeout);
nlohmann::json network_op(bool ask_proxy);
nlohmann::json forward_op(uint16_t host_port, uint16_t guest_port);
nlohmann::json unforward_op(uint16_t host_port);

// The policy op (docs/control-protocol.md): without rules it asks for the policy in force; with them
// (net/live_policy.h's JSON) they replace the running sandbox's, `change` saying what changed
// ({"action","rule","who","until_ms"}) for its audit record. Returns the policy in force after it.
Result<nlohmann::json> request_policy(const std::filesystem::path& ctl_sock, const nlohmann::json& op,
                                      std::chrono::milliseconds timeout);
nlohmann::json policy_op();
nlohmann::json policy_change_op(const nlohmann::json& rules, const nlohmann::json& change);
// The policy op's "pending": {"policy", "requests"}, the refusals waiting for the host user's approval
// (net/pending_requests.h's JSON).
Result<nlohmann::json> request_pending(const std::filesystem::path& ctl_sock, std::chrono::milliseconds timeout);

// Asks the supervisor to hold the sandbox still (docs/control-protocol.md's pause). It stays paused
// while the returned connection is open, and goes on when it closes (by the caller, or by its exit).
Result<UniqueFd> request_pause(const std::filesystem::path& ctl_sock, std::chrono::milliseconds timeout);

// Debugging and bench/vm.sh: asks a vm sandbox's supervisor for `count` (1..kMaxAgentPings) round trips
// of the guest agent's ping frame over its agent connection; returns them in microseconds, in order.
// The supervisor's loop waits meanwhile. Another backend answers with an error.
inline constexpr int kMaxAgentPings = 10000;
nlohmann::json agent_ping_op(int count);
Result<std::vector<int64_t>> request_agent_pings(const std::filesystem::path& ctl_sock, int count,
                                                 std::chrono::milliseconds timeout);

}  // namespace tnk::session
