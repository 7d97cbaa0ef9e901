// The SSH agent of SSH routes (tnk-ssh-agent, docs/network.md "SSH routes"): listens on a unix socket
// inside the sandbox (SSH_AUTH_SOCK), answers each connection through a net::AgentFilter, and passes
// what the filter lets through to the host's agent over one connection the relay opened before it
// dropped its privileges (the host user's own ssh-agent: run by root, a dropped relay could not open it
// later). Requests are answered one at a time, in order, as OpenSSH's own agent does.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "net/ssh_agent_filter.h"

namespace tnk::supervisor {

// One signature request, as the ssh_sign audit record has it (docs/audit-format.md). Public keys'
// fingerprints only.
struct SshSignEvent {
  std::string host;      // the bound route's host:port; empty when none
  std::string host_key;  // SHA256 fingerprint of the host key the session was bound to; empty: none
  std::string identity;  // SHA256 fingerprint of the key asked to sign
  bool allowed = false;  // passed on and signed by the host's agent
  std::string reason;    // refused: why
};
using SshSignSink = std::function<void(const SshSignEvent&)>;

nlohmann::json to_json(const SshSignEvent& event);
SshSignEvent ssh_sign_event_from_json(const nlohmann::json& json);

// "SHA256:" and the unpadded base64 of a key blob's SHA-256, as ssh-keygen -l prints it.
std::string ssh_fingerprint(std::string_view blob);

struct SshAgentLimits {
  std::size_t max_connections = 16;
  std::chrono::milliseconds upstream_timeout{30'000};  // the host agent may ask its user to confirm
};

// Serves until `stop_fd` becomes readable. `upstream_fd`: the host agent's connection, or -1 (every
// request the filter passes is then refused). Every signature request is one event.
Status serve_ssh_agent(int listener_fd, int upstream_fd, const std::vector<net::SshRoute>& routes, int stop_fd,
                       const SshSignSink& on_event, const SshAgentLimits& limits = {});

}  // namespace tnk::supervisor
