#include "supervisor/ssh_agent_relay.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "audit/sha256.h"
#include "core/json_fields.h"
#include "core/unique_fd.h"
#include "net/base64.h"
#include "net/ssh_wire.h"
#include "supervisor/ssh_host_signature.h"

namespace tnk::supervisor {
namespace {

constexpr std::chrono::seconds kClientSendTimeout{5};

struct AgentClient {
  UniqueFd fd;
  std::string in;
  net::AgentFilter filter;
};

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// One request to the host's agent and its answer's body; empty on any failure (the caller then
// answers SSH_AGENT_FAILURE and gives the connection up).
std::string ask_upstream(int& upstream_fd, std::string_view body, std::chrono::milliseconds timeout) {
  if (upstream_fd < 0) return "";
  if (!send_all(upstream_fd, net::agent_frame(body))) {
    upstream_fd = -1;
    return "";
  }
  std::string buffer, answer;
  for (;;) {
    net::AgentFrame frame = net::take_agent_message(buffer, answer);
    if (frame == net::AgentFrame::kMessage) return answer;
    pollfd p{upstream_fd, POLLIN, 0};
    char chunk[4096];
    ssize_t n = ::poll(&p, 1, static_cast<int>(timeout.count())) == 1 ? ::read(upstream_fd, chunk, sizeof chunk) : -1;
    if (frame == net::AgentFrame::kTooLong || n <= 0) {
      upstream_fd = -1;  // out of step with it now: nothing more goes there
      return "";
    }
    buffer.append(chunk, static_cast<size_t>(n));
  }
}

// Answers every whole message `client` has sent; false when the connection should end.
bool answer_messages(AgentClient& client, int& upstream_fd, const SshSignSink& on_event, const SshAgentLimits& limits) {
  std::string body;
  for (;;) {
    net::AgentFrame frame = net::take_agent_message(client.in, body);
    if (frame == net::AgentFrame::kNeedMore) return true;
    if (frame == net::AgentFrame::kTooLong) return false;
    net::AgentStep step = client.filter.on_message(body);
    std::string answer = step.message;
    if (step.kind == net::AgentStep::Kind::kForward) {
      answer = ask_upstream(upstream_fd, step.message, limits.upstream_timeout);
      if (step.filter_identities) answer = client.filter.filter_identities(answer);
      if (answer.empty()) answer = net::agent_failure();
    }
    if (step.sign) {
      SshSignEvent event{step.sign->host, step.sign->host_key.empty() ? "" : ssh_fingerprint(step.sign->host_key),
                         ssh_fingerprint(step.sign->identity), step.sign->allowed, step.sign->reason};
      if (event.allowed && static_cast<uint8_t>(answer[0]) != net::kAgentSignResponse) {
        event.allowed = false;
        event.reason = upstream_fd < 0 ? "the host's agent cannot be reached" : "the host's agent refused to sign";
      }
      on_event(event);
    }
    if (!send_all(client.fd.get(), net::agent_frame(answer))) return false;
  }
}

}  // namespace

nlohmann::json to_json(const SshSignEvent& event) {
  return {{"event", "ssh_sign"},        {"host", event.host},       {"host_key", event.host_key},
          {"identity", event.identity}, {"allowed", event.allowed}, {"reason", event.reason}};
}

// Lenient, like route_event_from_json: a field of the wrong type reads as absent.
SshSignEvent ssh_sign_event_from_json(const nlohmann::json& json) {
  JsonFields fields(json, "an ssh_sign event");
  auto text = [&fields](const char* key) {
    auto value = fields.optional_string(key);
    return value ? *value : std::string();
  };
  auto allowed = fields.optional_boolean("allowed", false);
  return {text("host"), text("host_key"), text("identity"), allowed && *allowed, text("reason")};
}

std::string ssh_fingerprint(std::string_view blob) {
  std::string hex = audit::sha256_hex(blob), digest;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    digest.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return "SHA256:" + net::base64_encode(digest, false);
}

Status serve_ssh_agent(int listener_fd, int upstream_fd, const std::vector<net::SshRoute>& routes, int stop_fd,
                       const SshSignSink& on_event, const SshAgentLimits& limits) {
  std::vector<std::unique_ptr<AgentClient>> clients;
  for (;;) {
    std::vector<pollfd> fds = {{stop_fd, POLLIN, 0}, {listener_fd, POLLIN, 0}};
    for (const auto& client : clients) fds.push_back({client->fd.get(), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return sys_error(errno, "waiting for the sandbox's SSH agent connections");
    }
    if (fds[0].revents != 0) return ok_status();
    for (size_t i = fds.size(); i-- > 2;) {
      if (fds[i].revents == 0) continue;
      AgentClient& client = *clients[i - 2];
      char chunk[4096];
      ssize_t n = ::read(client.fd.get(), chunk, sizeof chunk);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n > 0) client.in.append(chunk, static_cast<size_t>(n));
      if (n <= 0 || !answer_messages(client, upstream_fd, on_event, limits)) {
        clients.erase(clients.begin() + static_cast<std::ptrdiff_t>(i - 2));
      }
    }
    if (fds[1].revents == 0) continue;
    UniqueFd accepted(::accept4(listener_fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (!accepted.valid() || clients.size() >= limits.max_connections) continue;  // beyond the limit: closed
    timeval send_timeout{kClientSendTimeout.count(), 0};
    ::setsockopt(accepted.get(), SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
    clients.push_back(std::make_unique<AgentClient>(
        AgentClient{std::move(accepted), "", net::AgentFilter(routes, verify_host_signature)}));
  }
}

}  // namespace tnk::supervisor
