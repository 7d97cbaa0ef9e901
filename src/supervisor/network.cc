#include "supervisor/network.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <thread>

#include "core/files.h"
#include "core/random_token.h"
#include "core/terminal_text.h"
#include "core/unique_fd.h"
#include "net/policy.h"
#include "net/policy_channel.h"
#include "net/proxy_credential.h"
#include "supervisor/log_line.h"
#include "supervisor/relays.h"
#include "supervisor/ssh_command.h"

namespace tnk::supervisor {
namespace {

constexpr std::chrono::milliseconds kRelayStopGrace{1000};  // to report the connections a stop cuts
constexpr std::chrono::milliseconds kProxyAnswerTimeout{2000};

// 127.0.0.1:port on the host, for a port forward. Only loopback: a forward never opens the sandbox to the LAN.
Result<UniqueFd> listen_host_loopback(uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return sys_error(errno, "creating a socket");
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd.get(), SOMAXCONN) != 0) {
    int err = errno;
    Error error = sys_error(err, "listening on 127.0.0.1:" + std::to_string(port) + " on the host");
    if (err == EADDRINUSE) error.hint = "another program uses that port: pick another host port";
    return error;
  }
  return fd;
}

uint16_t local_port(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

// Stops one relay: SIGTERM lets it report the connections it ends; SIGKILL after the grace.
void end_relay(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + kRelayStopGrace;
  while (::waitpid(pid, nullptr, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

Status Network::start() {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return sys_error(errno, "creating the network event pipe");
  events_read_.reset(pipe_fds[0]);
  events_write_.reset(pipe_fds[1]);
  ::fcntl(events_read_.get(), F_SETFL, O_NONBLOCK);
  TNK_RETURN_IF_ERROR(start_forwarder());
  TNK_RETURN_IF_ERROR(start_policy_proxy());
  TNK_RETURN_IF_ERROR(start_route_gateway());
  TNK_RETURN_IF_ERROR(start_ssh_agent());
  for (const PortForward& forward : config_.forwards) {
    auto added = add_forward(forward);
    if (!added) return added.error().context("forwarding the manifest's port " + to_string(forward));
  }
  return ok_status();
}

Status Network::start_forwarder() {
  if (config_.inference_port == 0 || config_.network == NetworkPolicy::kNone) return ok_status();
  TNK_ASSIGN_OR_RETURN(UniqueFd listener, engine_.listen_inside(config_.inference_port));
  net::ForwardTarget target{config_.inference_host, config_.inference_port, "inference endpoint"};
  // One token per start, kept in memory only: a restarted relay keeps it, a restarted sandbox gets another.
  if (inference_token_.empty()) {
    TNK_ASSIGN_OR_RETURN(inference_token_, random_token());
  }
  net::InferenceLimits limits;
  limits.concurrency = config_.gateway.concurrency;
  limits.max_answer_bytes = config_.gateway.answer_limit;
  net::GatewaySettings settings{inference_token_, config_.gateway.api_key, config_.gateway.aliases,
                                static_cast<std::size_t>(config_.gateway.request_limit)};
  TNK_ASSIGN_OR_RETURN(forwarder_, supervisor::start_inference_forwarder(
                                       std::move(listener), target, {events_write_.get(), to_string(config_.network)},
                                       limits, settings));
  return ok_status();
}

Status Network::start_policy_proxy() {
  if (!has_egress_proxy(config_.network)) return ok_status();
  TNK_ASSIGN_OR_RETURN(UniqueFd listener, engine_.listen_inside(kProxyPort));
  net::ProxyConfig proxy;
  net::PolicyInForce policy = in_force();
  proxy.allow = policy.allow;
  proxy.deny = policy.deny;
  proxy.allow_any = config_.network == NetworkPolicy::kOpen;
  proxy.open_ports = config_.open_ports;
  proxy.list_name = "network.allow";
  TNK_ASSIGN_OR_RETURN(net::PolicyChannel channel, net::open_policy_channel());
  proxy.policy_fd = channel.proxy_end.get();
  TNK_ASSIGN_OR_RETURN(proxy_,
                       start_proxy(std::move(listener), proxy, {events_write_.get(), to_string(config_.network)}));
  proxy_policy_ = std::move(channel.supervisor_end);  // the proxy's end closes here: the child has its own
  return ok_status();
}

// Under every policy but `none` (which has no network at all), when tnk.toml defines routes.
Status Network::start_route_gateway() {
  if (config_.routes.empty() || config_.network == NetworkPolicy::kNone) return ok_status();
  TNK_ASSIGN_OR_RETURN(UniqueFd listener, engine_.listen_inside(kRoutesPort));
  TNK_ASSIGN_OR_RETURN(routes_, supervisor::start_route_gateway(std::move(listener), config_.routes,
                                                                {events_write_.get(), to_string(config_.network)}));
  return ok_status();
}

// When the config has SSH routes (the plan keeps them only under `allowlist` and `open`).
Status Network::start_ssh_agent() {
  if (config_.ssh_routes.empty()) return ok_status();
  TNK_ASSIGN_OR_RETURN(UniqueFd listener, engine_.listen_unix_inside(kSshAgentSocket, kSshAgentPort));
  TNK_ASSIGN_OR_RETURN(ssh_agent_,
                       supervisor::start_ssh_agent(std::move(listener), config_.ssh_agent, config_.ssh_routes,
                                                   {events_write_.get(), to_string(config_.network)}));
  return ok_status();
}

void Network::read_events() {
  char buffer[8192];
  for (;;) {
    ssize_t n = ::read(events_read_.get(), buffer, sizeof buffer);
    if (n <= 0) break;
    pending_.append(buffer, static_cast<size_t>(n));
  }
  size_t start = 0;
  for (size_t end; (end = pending_.find('\n', start)) != std::string::npos; start = end + 1) {
    auto line = nlohmann::json::parse(pending_.substr(start, end - start), nullptr, false);
    if (!line.is_object()) continue;
    audit_.record(line);
    note_refusal(line);
  }
  pending_.erase(0, start);
}

bool Network::owns(pid_t pid) const {
  if (pid == forwarder_ || pid == proxy_ || pid == provision_proxy_ || pid == routes_ || pid == ssh_agent_) {
    return true;
  }
  for (const auto& [port, entry] : forwards_) {
    if (entry.second == pid) return true;
  }
  return false;
}

void Network::relay_ended(pid_t pid) {
  if (pid == provision_proxy_) provision_proxy_ = 0;
  for (auto it = forwards_.begin(); it != forwards_.end(); ++it) {
    if (it->second.second != pid) continue;
    log_line("the port forward " + to_string(it->second.first) + " ended");
    forwards_.erase(it);
    break;
  }
  bool forwarder = pid == forwarder_, proxy = pid == proxy_, routes = pid == routes_, ssh = pid == ssh_agent_;
  if (forwarder) forwarder_ = 0;
  if (proxy) proxy_ = 0;
  if (routes) routes_ = 0;
  if (ssh) ssh_agent_ = 0;
  if (stopping_ || !(forwarder || proxy || routes || ssh)) return;
  log_line(std::string("the ") +
           (forwarder ? "inference forwarder"
            : proxy   ? "egress proxy"
            : routes  ? "route gateway"
                      : "ssh agent") +
           " ended; restarting it");
  Status restarted = forwarder ? start_forwarder()
                     : proxy   ? start_policy_proxy()
                     : routes  ? start_route_gateway()
                               : start_ssh_agent();
  if (!restarted.ok()) log_line("cannot restart it: " + restarted.error().message);
}

Status Network::begin_provisioning(const std::vector<std::string>& allow, bool any) {
  if (provision_proxy_ == 0 && (any || !allow.empty())) {
    TNK_ASSIGN_OR_RETURN(UniqueFd listener, engine_.listen_inside(kProvisionProxyPort));
    net::ProxyConfig proxy;
    proxy.allow = allow;
    proxy.allow_any = any;
    proxy.open_ports = config_.open_ports;
    proxy.list_name = "provisioning allow-list";
    // Only the run's own processes are given it: nothing else in the sandbox can use this proxy.
    TNK_ASSIGN_OR_RETURN(provision_token_, random_token());
    proxy.credential = net::basic_credential("tnk", provision_token_);
    TNK_ASSIGN_OR_RETURN(provision_proxy_, start_proxy(std::move(listener), proxy, {events_write_.get(), "provision"}));
  }
  ++provisioning_sessions_;
  return ok_status();
}

// Ended and reaped here, not by the loop: a provisioning exec that arrives before the loop's next turn
// must see no proxy and start a new one, not count on one that is already dying (its port refuses).
void Network::end_provisioning() {
  if (--provisioning_sessions_ > 0 || provision_proxy_ == 0) return;
  end_relay(provision_proxy_);
  provision_proxy_ = 0;
  read_events();
}

std::vector<std::string> Network::session_env(bool provisioning) const {
  std::string host = engine_.relay_host();
  std::vector<std::string> env = routes_env();
  std::vector<std::string> proxy;
  if (provisioning && provision_proxy_ != 0) {
    proxy = proxy_env(kProvisionProxyPort, host, "tnk:" + provision_token_ + "@");
  } else if (!provisioning && has_egress_proxy(config_.network)) {
    proxy = proxy_env(kProxyPort, host);
  }
  if (!provisioning && !inference_token_.empty()) {
    env.push_back("TNK_INFERENCE_TOKEN=" + inference_token_);
    for (const std::string& name : config_.gateway.token_env) env.push_back(name + "=" + inference_token_);
  }
  env.insert(env.end(), proxy.begin(), proxy.end());
  if (!provisioning && ssh_agent_ != 0 && has_egress_proxy(config_.network)) {
    env.push_back(std::string("SSH_AUTH_SOCK=") + kSshAgentSocket);
    env.push_back("GIT_SSH_COMMAND=" + git_ssh_command(config_.ssh_routes, host, kProxyPort));
  }
  return env;
}

// TNK_ROUTES_URL, and git pointed at the profile's git_routes through GIT_CONFIG_* (no file is written
// inside): url.<routes>/<name>/.insteadOf <prefix>. host.tnk.internal names the relays on every backend.
std::vector<std::string> Network::routes_env() const {
  if (config_.routes.empty() || config_.network == NetworkPolicy::kNone) return {};
  std::string base = "http://host.tnk.internal:" + std::to_string(kRoutesPort) + std::string(net::kRoutesPrefix);
  std::vector<std::string> env = {"TNK_ROUTES_URL=" + base.substr(0, base.size() - 1)};
  std::size_t n = 0;
  for (const auto& [name, prefix] : config_.git_routes) {
    std::string i = std::to_string(n++);
    env.push_back("GIT_CONFIG_KEY_" + i + "=url." + base + name + "/.insteadOf");
    env.push_back("GIT_CONFIG_VALUE_" + i + "=" + prefix);
  }
  if (n > 0) env.push_back("GIT_CONFIG_COUNT=" + std::to_string(n));
  return env;
}

Result<pid_t> Network::start_forward_relay(const PortForward& forward, UniqueFd listener) {
  net::ForwardTarget target{"127.0.0.1", forward.guest_port, "port forward " + to_string(forward)};
  target.dial = [this, port = forward.guest_port](net::Clock::time_point deadline, int stop_fd) {
    return engine_.connect_inside("127.0.0.1", port, deadline, stop_fd);
  };
  return supervisor::start_port_forward(std::move(listener), target, {events_write_.get(), "port forward"},
                                        [this] { return engine_.enter_network(); });
}

Result<PortForward> Network::add_forward(PortForward forward) {
  if (forward.guest_port == 0) return usage_error("a port forward needs a port inside the sandbox (1-65535)");
  if (forward.host_port != 0 && forwards_.contains(forward.host_port)) {
    const PortForward& existing = forwards_[forward.host_port].first;
    if (existing == forward) return forward;
    return usage_error(
        "host port " + std::to_string(forward.host_port) + " is already forwarded (" + to_string(existing) + ")",
        "remove it first: tnk sandbox forward --remove " + std::to_string(forward.host_port));
  }
  TNK_ASSIGN_OR_RETURN(UniqueFd listener, listen_host_loopback(forward.host_port));
  forward.host_port = local_port(listener.get());
  TNK_ASSIGN_OR_RETURN(pid_t pid, start_forward_relay(forward, std::move(listener)));
  forwards_[forward.host_port] = {forward, pid};
  log_line("forwarding 127.0.0.1:" + std::to_string(forward.host_port) + " to port " +
           std::to_string(forward.guest_port) + " inside");
  return forward;
}

Status Network::remove_forward(uint16_t host_port) {
  auto it = forwards_.find(host_port);
  if (it == forwards_.end()) {
    return not_found("no port forward on host port " + std::to_string(host_port), "`tnk sandbox inspect` lists them");
  }
  end_relay(it->second.second);
  forwards_.erase(it);
  read_events();
  return ok_status();
}

// A child moves into the sandbox's network and asks the proxy for its health name, as a session would.
std::string Network::ask_proxy(uint16_t port, bool* answers) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return "cannot create a pipe";
  UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  pid_t child = ::fork();
  if (child < 0) return "cannot fork";
  if (child == 0) {
    std::string answer = "cannot enter the sandbox's network";
    if (engine_.enter_network().ok()) {
      auto connected = engine_.connect_inside(engine_.relay_host(), port, net::Clock::now() + kProxyAnswerTimeout, -1);
      answer = connected ? net::ask_proxy_health(connected->get(), kProxyAnswerTimeout) : connected.error().message;
    }
    (void)write_all(write_end.get(), answer, "pipe");
    ::_exit(0);
  }
  write_end.reset();
  std::string answer;
  char buffer[512];
  for (ssize_t n; (n = ::read(read_end.get(), buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno != EINTR) break;
    if (n > 0) answer.append(buffer, static_cast<size_t>(n));
  }
  ::waitpid(child, nullptr, 0);
  *answers = answer.starts_with("HTTP/1.1 200");
  size_t body = answer.find("\r\n\r\n");
  if (*answers && body != std::string::npos) answer.erase(0, body + 4);  // "tnk proxy: ok"
  answer = answer.substr(0, answer.find_first_of("\r\n"));
  return terminal_safe(answer);  // the guest's bytes, printed by doctor and inspect
}

nlohmann::json Network::describe(bool ask) {
  nlohmann::json forwards = nlohmann::json::array();
  for (const auto& [port, entry] : forwards_) {
    forwards.push_back({{"host", "127.0.0.1"}, {"host_port", port}, {"guest_port", entry.first.guest_port}});
  }
  nlohmann::json proxy = nullptr;
  if (proxy_ != 0) {
    proxy = {{"address", engine_.relay_host() + ":" + std::to_string(kProxyPort)}};  // as the sandbox reaches it
    if (ask) {
      bool answers = false;
      proxy["answer"] = ask_proxy(kProxyPort, &answers);
      proxy["answers"] = answers;
    }
  }
  nlohmann::json routes = nlohmann::json::array();
  for (const net::CredentialRoute& route : config_.routes) {  // never the header's value
    routes.push_back({{"name", route.name},
                      {"upstream", net::upstream_url(route.host, route.port)},
                      {"url", "http://host.tnk.internal:" + std::to_string(kRoutesPort) +
                                  std::string(net::kRoutesPrefix) + route.name + "/"},
                      {"running", routes_ != 0}});
  }
  return {{"policy", to_string(config_.network)},   {"allow", config_.allow}, {"routes", routes},
          {"inference_forwarder", forwarder_ != 0}, {"proxy", proxy},         {"forwards", forwards}};
}

void Network::stop() {
  stopping_ = true;
  std::vector<pid_t> relays = {forwarder_, proxy_, provision_proxy_, routes_, ssh_agent_};
  for (const auto& [port, entry] : forwards_) relays.push_back(entry.second);
  for (pid_t pid : relays) {
    if (pid > 0) ::kill(pid, SIGTERM);
  }
  for (pid_t pid : relays) end_relay(pid);
  forwarder_ = proxy_ = provision_proxy_ = routes_ = ssh_agent_ = 0;
  forwards_.clear();
  read_events();
}

}  // namespace tnk::supervisor
