#include "supervisor/relays.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <functional>

#include "net/forwarder.h"
#include "net/proxy.h"

namespace tnk::supervisor {
namespace {

// The child dies with the supervisor, and unblocks the signals the supervisor reads from a signalfd.
Result<pid_t> fork_relay(const char* what, const char* comm, const std::function<Status()>& serve) {
  pid_t pid = ::fork();
  if (pid < 0) return sys_error(errno, std::string("starting the ") + what);
  if (pid > 0) return pid;
  ::prctl(PR_SET_NAME, comm);  // tells it apart from the supervisor in ps
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) ::_exit(0);
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_UNBLOCK, &all, nullptr);
  Status served = serve();
  if (!served.ok()) std::fprintf(stderr, "tnk-supervisor: %s: %s\n", what, served.error().message.c_str());
  ::_exit(served.ok() ? 0 : 1);
}

void log_proxy_event(const net::ProxyEvent& event) {
  if (event.allowed) {
    std::fprintf(stderr, "proxy: allowed %s (%s) port %u by %s: %llu bytes up, %llu down\n", event.host.c_str(),
                 event.address.c_str(), event.port, event.rule.c_str(), static_cast<unsigned long long>(event.bytes_up),
                 static_cast<unsigned long long>(event.bytes_down));
  } else {
    std::fprintf(stderr, "proxy: denied %s port %u: %s\n", event.host.c_str(), event.port, event.reason.c_str());
  }
}

}  // namespace

Result<pid_t> start_forwarder(UniqueFd listener, const std::string& host, uint16_t port) {
  int fd = listener.get();
  auto pid = fork_relay("inference forwarder", "tnk-forwarder", [&] {
    return net::serve_forward(fd, net::ForwardTarget{host, port});
  });
  return pid;  // the parent's copy of the listener closes here; the child keeps its own
}

Result<pid_t> start_proxy(UniqueFd listener, const std::vector<std::string>& allow) {
  int fd = listener.get();
  net::ProxyConfig config;
  config.allow = allow;
  config.list_name = "provisioning allow-list";
  config.on_event = log_proxy_event;
  return fork_relay("provisioning proxy", "tnk-proxy", [&] { return net::serve_proxy(fd, config); });
}

std::vector<std::string> proxy_env() {
  std::string url = "http://127.0.0.1:" + std::to_string(kProvisionProxyPort);
  std::string no_proxy = "localhost,127.0.0.1,host.lima.internal,host.tnk.internal";
  return {"http_proxy=" + url,  "https_proxy=" + url,   "HTTP_PROXY=" + url,
          "HTTPS_PROXY=" + url, "no_proxy=" + no_proxy, "NO_PROXY=" + no_proxy};
}

}  // namespace tnk::supervisor
