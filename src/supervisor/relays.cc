#include "supervisor/relays.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "core/files.h"
#include "supervisor/line_rate.h"
#include "supervisor/openssl_library.h"
#include "supervisor/relay_drops.h"

namespace tnk::supervisor {
namespace {

// The child dies with the supervisor; SIGTERM becomes its serve loop's stop fd, every other signal the
// supervisor reads from a signalfd is unblocked again. The ids it drops to are read here, in the
// supervisor: the child reads no file of root's.
using RelayServe = std::function<Status(int stop_fd, const std::optional<RelayAccount>& account)>;
Result<pid_t> fork_relay(const char* what, const char* comm, const RelayServe& serve) {
  TNK_ASSIGN_OR_RETURN(std::optional<RelayAccount> account, relay_account());
  pid_t pid = ::fork();
  if (pid < 0) return sys_error(errno, std::string("starting the ") + what);
  if (pid > 0) return pid;
  ::prctl(PR_SET_NAME, comm);  // tells it apart from the supervisor in ps
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) ::_exit(0);
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  int stop_fd = ::signalfd(-1, &term, SFD_CLOEXEC);
  sigset_t others;
  sigfillset(&others);
  sigdelset(&others, SIGTERM);
  ::sigprocmask(SIG_UNBLOCK, &others, nullptr);
  Status served = serve(stop_fd, account);
  if (!served.ok()) std::fprintf(stderr, "tnk-supervisor: %s: %s\n", what, served.error().message.c_str());
  ::_exit(served.ok() ? 0 : 1);
}

// One line per decision to the supervisor's event pipe (one write: lines stay whole), which the
// supervisor turns into the audit record, and `summary` to its log, rate-limited (line_rate.h). Text
// that is not valid UTF-8 is replaced, as the audit writer does: the strict encoder would throw and lose
// the decision (security review L1).
using DecisionWriter = std::function<void(nlohmann::json line, const std::string& summary)>;

DecisionWriter decision_writer(const RelayEvents& events) {
  auto rate = std::make_shared<LineRate>();
  return [events, rate](nlohmann::json line, const std::string& summary) {
    line["policy"] = events.policy;
    std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    if (events.fd >= 0) (void)write_all(events.fd, text, "the supervisor's event pipe");
    std::string note;
    if (!rate->admit(LineRate::Clock::now(), note)) return;
    if (!note.empty()) std::fprintf(stderr, "%s: %s\n", events.policy.c_str(), note.c_str());
    std::fprintf(stderr, "%s: %s\n", events.policy.c_str(), summary.c_str());
  };
}

net::NetEventSink event_sink(const RelayEvents& events) {
  return [write = decision_writer(events)](const net::NetEvent& event) {
    write(net::to_json(event), std::string(event.allowed ? "allowed " : "denied ") + event.host + " port " +
                                   std::to_string(event.port) + ": " + (event.allowed ? event.rule : event.reason));
  };
}

// The route gateway's lines: one route_request each (never the credential: a RouteEvent has none).
RouteEventSink route_event_sink(const RelayEvents& events) {
  return [write = decision_writer(events)](const RouteEvent& event) {
    write(to_json(event), "route " + event.route + ": " + event.method + " " + event.path + ": " +
                              std::to_string(event.status) + (event.allowed ? "" : " " + event.reason));
  };
}

// The SSH agent's lines: one ssh_sign each (fingerprints, never a key).
SshSignSink ssh_sign_sink(const RelayEvents& events) {
  return [write = decision_writer(events)](const SshSignEvent& event) {
    write(to_json(event), "ssh signature for " + (event.host.empty() ? "an unlisted host" : event.host) + " with " +
                              event.identity + ": " + (event.allowed ? "allowed" : "refused: " + event.reason));
  };
}

// The host's agent, or an invalid fd (said on stderr) when it cannot be reached: the relay still
// answers, refusing what it would have passed on.
UniqueFd connect_host_agent(const std::filesystem::path& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const std::string& text = path.native();
  if (fd.valid() && !text.empty() && text.size() < sizeof address.sun_path) {
    std::memcpy(address.sun_path, text.c_str(), text.size() + 1);
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) return fd;
  }
  std::fprintf(stderr, "tnk-supervisor: ssh agent: cannot connect to the host's agent at %s: %s\n", text.c_str(),
               std::strerror(errno));
  return UniqueFd();
}

}  // namespace

Result<pid_t> start_ssh_agent(UniqueFd listener, const std::filesystem::path& upstream,
                              const std::vector<net::SshRoute>& routes, const RelayEvents& events) {
  int fd = listener.get();
  return fork_relay("ssh agent", "tnk-ssh-agent",
                    [&](int stop_fd, const std::optional<RelayAccount>& account) -> Status {
                      UniqueFd host_agent = connect_host_agent(upstream);
                      (void)openssl();  // loaded before the drop, as the route gateway's TLS is
                      std::vector<int> keep = {fd, stop_fd, events.fd};
                      if (host_agent.valid()) keep.push_back(host_agent.get());
                      TNK_RETURN_IF_ERROR(drop_relay_privileges(keep, account));
                      return serve_ssh_agent(fd, host_agent.get(), routes, stop_fd, ssh_sign_sink(events));
                    });
}

Result<pid_t> start_route_gateway(UniqueFd listener, const std::vector<net::CredentialRoute>& routes,
                                  const RelayEvents& events) {
  int fd = listener.get();
  return fork_relay(
      "route gateway", "tnk-routes", [&](int stop_fd, const std::optional<RelayAccount>& account) -> Status {
        TNK_ASSIGN_OR_RETURN(auto prepared, prepare_routes(routes));  // reads the CA files: before the drop
        TNK_RETURN_IF_ERROR(drop_relay_privileges({fd, stop_fd, events.fd}, account));
        return serve_routes(fd, prepared, stop_fd, route_event_sink(events));
      });
}

Result<pid_t> start_inference_forwarder(UniqueFd listener, const net::ForwardTarget& target, const RelayEvents& events,
                                        const net::InferenceLimits& limits, const net::GatewaySettings& settings) {
  int fd = listener.get();
  return fork_relay("inference forwarder", "tnk-forwarder",
                    [&](int stop_fd, const std::optional<RelayAccount>& account) -> Status {
                      TNK_RETURN_IF_ERROR(drop_relay_privileges({fd, stop_fd, events.fd}, account));
                      return net::serve_inference_forward(fd, target, stop_fd, event_sink(events), limits, settings);
                    });  // the parent's copy of the listener closes here; the child keeps its own
}

Result<pid_t> start_port_forward(UniqueFd listener, const net::ForwardTarget& target, const RelayEvents& events,
                                 const std::function<Status()>& enter) {
  int fd = listener.get();
  return fork_relay("port forward", "tnk-forwarder",
                    [&](int stop_fd, const std::optional<RelayAccount>& account) -> Status {
                      TNK_RETURN_IF_ERROR(enter());
                      TNK_RETURN_IF_ERROR(drop_relay_privileges({fd, stop_fd, events.fd}, account));
                      return net::serve_forward(fd, target, stop_fd, event_sink(events));
                    });
}

Result<pid_t> start_proxy(UniqueFd listener, net::ProxyConfig config, const RelayEvents& events) {
  int fd = listener.get();
  config.on_event = event_sink(events);
  return fork_relay("egress proxy", "tnk-proxy",
                    [&](int stop_fd, const std::optional<RelayAccount>& account) -> Status {
                      std::vector<int> keep = {fd, stop_fd, events.fd};
                      if (config.policy_fd >= 0) keep.push_back(config.policy_fd);
                      TNK_RETURN_IF_ERROR(drop_relay_privileges(keep, account));
                      return net::serve_proxy(fd, config, stop_fd);
                    });
}

std::vector<std::string> proxy_env(uint16_t port, const std::string& host, const std::string& userinfo) {
  std::string url = "http://" + userinfo + host + ":" + std::to_string(port);
  std::string no_proxy = "localhost,127.0.0.1,host.lima.internal,host.tnk.internal";
  return {"http_proxy=" + url,  "https_proxy=" + url,   "HTTP_PROXY=" + url,
          "HTTPS_PROXY=" + url, "no_proxy=" + no_proxy, "NO_PROXY=" + no_proxy};
}

}  // namespace tnk::supervisor
