// The SSH agent the sandbox talks to (docs/network.md, "SSH routes"): what it answers itself, what it
// passes to the host's agent, and the one rule for a signature. A signature is passed on only for an
// identity an SSH route lists, in a session bound (OpenSSH's session-bind@openssh.com, as `ssh-add -h`
// destination constraints use it) to the host key of that route, proved by the host's signature over
// the session identifier, and only over a user authentication request of that same session. Everything
// else is refused with SSH_AGENT_FAILURE. Pure: the host signature check is handed in (OpenSSL lives
// in supervisor/), and the caller does the I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tnk::net {

// Message numbers (draft-miller-ssh-agent).
inline constexpr uint8_t kAgentFailure = 5;
inline constexpr uint8_t kAgentSuccess = 6;
inline constexpr uint8_t kAgentRequestIdentities = 11;
inline constexpr uint8_t kAgentIdentitiesAnswer = 12;
inline constexpr uint8_t kAgentSignRequest = 13;
inline constexpr uint8_t kAgentSignResponse = 14;
inline constexpr uint8_t kAgentExtension = 27;
// OpenSSH's agent refuses messages above 256 KiB; so does this one.
inline constexpr uint32_t kMaxAgentMessage = 256 * 1024;

// One SSH route (tnk.toml's [[ssh_routes]]): keys as blobs in the wire encoding.
struct SshRoute {
  std::string host;  // a name or an IPv4 address, as git's URLs name it
  uint16_t port = 22;
  std::string host_key;                 // the server's host key
  std::vector<std::string> identities;  // the keys of the host's agent it may sign with
};
// "host:port", as records name a route.
std::string ssh_route_target(const SshRoute& route);

// True when `signature` (an SSH signature blob) is `host_key`'s over `data`.
using HostSignatureCheck =
    std::function<bool(std::string_view host_key, std::string_view signature, std::string_view data)>;

// One signature request and what became of it.
struct SignDecision {
  std::string host;      // the bound route's "host:port"; empty when no listed host is bound
  std::string host_key;  // the host key the session was bound to (or tried to bind); empty: none
  std::string identity;  // the key blob asked for
  bool allowed = false;
  std::string reason;  // refused: why
};

// What to do with one message from the sandbox.
struct AgentStep {
  enum class Kind { kReply, kForward } kind = Kind::kReply;
  std::string message;             // the body (type byte first) to answer with, or to pass to the host's agent
  bool filter_identities = false;  // pass the host agent's answer through filter_identities()
  std::optional<SignDecision> sign;
};

// Splits one message off the front of `buffer` (uint32 length, then the body). kTooLong: a length of 0
// or above kMaxAgentMessage; the connection should end.
enum class AgentFrame { kNeedMore, kMessage, kTooLong };
AgentFrame take_agent_message(std::string& buffer, std::string& body);
std::string agent_frame(std::string_view body);
std::string agent_failure();

// One connection's state: the session it is bound to.
class AgentFilter {
 public:
  AgentFilter(std::vector<SshRoute> routes, HostSignatureCheck check)
      : routes_(std::move(routes)), check_(std::move(check)) {}

  AgentStep on_message(std::string_view body);
  // The host agent's answer to REQUEST_IDENTITIES with only the identities the bound route lists (every
  // route's, before a bind); anything but an identities answer becomes a failure.
  std::string filter_identities(std::string_view answer) const;

 private:
  AgentStep on_extension(std::string_view body);
  AgentStep on_sign(std::string_view body);
  bool listed(std::string_view identity) const;

  std::vector<SshRoute> routes_;
  HostSignatureCheck check_;
  std::optional<size_t> bound_;  // index into routes_
  std::string session_id_;
  std::string tried_host_key_;  // the last bind's host key, bound or refused
  std::string bind_refusal_;    // why the last bind was refused
  bool bound_twice_ = false;    // a second bind: nothing is signed on this connection any more
};

}  // namespace tnk::net
