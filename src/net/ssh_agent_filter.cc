#include "net/ssh_agent_filter.h"

#include <algorithm>

#include "net/ssh_wire.h"

namespace tnk::net {
namespace {

constexpr std::string_view kSessionBind = "session-bind@openssh.com";
constexpr uint8_t kUserauthRequest = 50;  // SSH2_MSG_USERAUTH_REQUEST (RFC 4252)
constexpr std::string_view kPublickey = "publickey";
// OpenSSH 8.9's method, which names the server's host key too.
constexpr std::string_view kPublickeyHostbound = "publickey-hostbound-v00@openssh.com";

bool holds(const std::vector<std::string>& keys, std::string_view key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

AgentStep reply(std::string body) { return {AgentStep::Kind::kReply, std::move(body), false, std::nullopt}; }

// Empty when `data` is a publickey user authentication request of `session_id` for `identity` (and,
// in the host-bound form, naming `host_key`); else what it is not.
std::string userauth_mismatch(std::string_view data, std::string_view session_id, std::string_view identity,
                              std::string_view host_key) {
  SshReader reader(data);
  std::string_view id, user, service, method, algorithm, key;
  uint8_t type = 0;
  bool has_signature = false;
  if (!reader.string(id) || !reader.byte(type) || !reader.string(user) || !reader.string(service) ||
      !reader.string(method) || !reader.boolean(has_signature) || !reader.string(algorithm) || !reader.string(key)) {
    return "the data to sign is not a user authentication request";
  }
  if (id != session_id) return "the data to sign belongs to another session than the one bound";
  if (type != kUserauthRequest || service != "ssh-connection" || !has_signature) {
    return "the data to sign is not a user authentication request";
  }
  if (method != kPublickey && method != kPublickeyHostbound) return "the data to sign is not a publickey request";
  if (key != identity) return "the data to sign names another key than the one asked to sign";
  if (method == kPublickeyHostbound) {
    std::string_view named_host_key;
    if (!reader.string(named_host_key) || named_host_key != host_key) {
      return "the data to sign names another host key than the one bound";
    }
  }
  if (!reader.done()) return "the data to sign has bytes after the request";
  return "";
}

}  // namespace

std::string ssh_route_target(const SshRoute& route) { return route.host + ":" + std::to_string(route.port); }

AgentFrame take_agent_message(std::string& buffer, std::string& body) {
  SshReader reader(buffer);
  uint32_t length = 0;
  if (!reader.u32(length)) return AgentFrame::kNeedMore;
  if (length == 0 || length > kMaxAgentMessage) return AgentFrame::kTooLong;
  if (buffer.size() - 4 < length) return AgentFrame::kNeedMore;
  body = buffer.substr(4, length);
  buffer.erase(0, 4 + static_cast<size_t>(length));
  return AgentFrame::kMessage;
}

std::string agent_frame(std::string_view body) {
  std::string out;
  put_string(out, body);
  return out;
}

std::string agent_failure() { return std::string(1, static_cast<char>(kAgentFailure)); }

AgentStep AgentFilter::on_message(std::string_view body) {
  if (body.empty()) return reply(agent_failure());
  auto type = static_cast<uint8_t>(body[0]);
  body.remove_prefix(1);
  switch (type) {
    case kAgentRequestIdentities:
      if (!body.empty()) return reply(agent_failure());
      return {AgentStep::Kind::kForward, std::string(1, static_cast<char>(kAgentRequestIdentities)), true,
              std::nullopt};
    case kAgentSignRequest: return on_sign(body);
    case kAgentExtension: return on_extension(body);
    default: return reply(agent_failure());  // adding, removing or locking keys, and anything unknown
  }
}

AgentStep AgentFilter::on_extension(std::string_view body) {
  SshReader reader(body);
  std::string_view name, host_key, session_id, signature;
  bool forwarding = false;
  if (!reader.string(name) || name != kSessionBind) return reply(agent_failure());
  if (!reader.string(host_key) || !reader.string(session_id) || !reader.string(signature) ||
      !reader.boolean(forwarding) || !reader.done() || session_id.empty()) {
    return reply(agent_failure());
  }
  if (bound_ || !tried_host_key_.empty()) bound_twice_ = true;  // as ssh never does on one connection
  tried_host_key_ = std::string(host_key);
  bound_.reset();
  session_id_.clear();
  if (bound_twice_) {
    bind_refusal_ = "the connection was bound twice";
  } else if (forwarding) {
    bind_refusal_ = "the session is a forwarded agent's (is_forwarding)";
  } else if (!check_(host_key, signature, session_id)) {
    bind_refusal_ = "the host key's signature over the session identifier does not verify";
  } else {
    auto route =
        std::find_if(routes_.begin(), routes_.end(), [&](const SshRoute& r) { return r.host_key == host_key; });
    if (route == routes_.end()) {
      bind_refusal_ = "the session's host key is not an SSH route's";
    } else {
      bound_ = static_cast<size_t>(route - routes_.begin());
      session_id_ = std::string(session_id);
      bind_refusal_.clear();
      return reply(std::string(1, static_cast<char>(kAgentSuccess)));
    }
  }
  return reply(agent_failure());
}

AgentStep AgentFilter::on_sign(std::string_view body) {
  SshReader reader(body);
  std::string_view identity, data;
  uint32_t flags = 0;
  if (!reader.string(identity) || !reader.string(data) || !reader.u32(flags) || !reader.done()) {
    return reply(agent_failure());
  }
  SignDecision decision{"", tried_host_key_, std::string(identity), false, ""};
  if (bound_) decision.host = ssh_route_target(routes_[*bound_]);
  if (!bound_) {
    decision.reason = tried_host_key_.empty() ? "the session is not bound to a host key (OpenSSH 8.9 or later binds it)"
                                              : "the session is bound to no SSH route's host: " + bind_refusal_;
  } else if (!holds(routes_[*bound_].identities, identity)) {
    decision.reason = "the identity is not one the route of " + decision.host + " lists";
  } else {
    decision.reason = userauth_mismatch(data, session_id_, identity, routes_[*bound_].host_key);
    decision.allowed = decision.reason.empty();
  }
  AgentStep step = reply(agent_failure());
  if (decision.allowed)
    step = {AgentStep::Kind::kForward, std::string(1, static_cast<char>(kAgentSignRequest)) + std::string(body), false,
            std::nullopt};
  step.sign = std::move(decision);
  return step;
}

bool AgentFilter::listed(std::string_view identity) const {
  if (bound_) return holds(routes_[*bound_].identities, identity);
  return std::any_of(routes_.begin(), routes_.end(), [&](const SshRoute& r) { return holds(r.identities, identity); });
}

std::string AgentFilter::filter_identities(std::string_view answer) const {
  SshReader reader(answer);
  uint8_t type = 0;
  uint32_t count = 0;
  if (!reader.byte(type) || type != kAgentIdentitiesAnswer || !reader.u32(count)) return agent_failure();
  std::string kept;
  uint32_t kept_count = 0;
  for (uint32_t i = 0; i < count; ++i) {
    std::string_view key, comment;
    if (!reader.string(key) || !reader.string(comment)) return agent_failure();
    if (!listed(key)) continue;
    put_string(kept, key);
    put_string(kept, comment);
    ++kept_count;
  }
  if (!reader.done()) return agent_failure();
  std::string out(1, static_cast<char>(kAgentIdentitiesAnswer));
  put_u32(out, kept_count);
  return out + kept;
}

}  // namespace tnk::net
