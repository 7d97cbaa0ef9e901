// A sandbox's network as its policy says (docs/network.md): the inference forwarder, the egress proxy
// of `allowlist` and `open`, the provisioning proxy while provisioning runs, the port forwards, and the
// net_allow/net_deny audit records of every decision they make. Owned by the Server and, like it,
// single-threaded: the relays are child processes, their decisions arrive as lines on one pipe.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/unique_fd.h"
#include "supervisor/config.h"
#include "supervisor/engine.h"
#include "supervisor/net_audit.h"

namespace tnk::supervisor {

class Network {
 public:
  Network(const SupervisorConfig& config, Engine& engine) : config_(config), engine_(engine) {}

  // The relays the sandbox has from its first moment: forwarder, the policy's proxy, the manifest's ports.
  Status start();
  int events_fd() const { return events_read_.get(); }
  void read_events();

  bool owns(pid_t pid) const;
  // A relay ended on its own: the forwarder and the policy's proxy are restarted (unless stopping).
  void relay_ended(pid_t pid);

  // The provisioning proxy exists while at least one provisioning session runs.
  Status begin_provisioning(const std::vector<std::string>& allow, bool any);
  void end_provisioning();
  // The variables a session gets: the proxy's (none when its policy has no proxy), and the inference
  // gateway's token as TNK_INFERENCE_TOKEN and the profile's agent variables (none under `none`).
  std::vector<std::string> session_env(bool provisioning) const;

  // A port forward for the sandbox's lifetime; host_port 0 picks a free port.
  Result<PortForward> add_forward(PortForward forward);
  Status remove_forward(uint16_t host_port);

  // {"policy", "allow", "proxy": {"port", "answers", "detail"} or null, "forwards"}. Asking the proxy
  // sends it one request from inside the sandbox (its health name, no decision, no record).
  nlohmann::json describe(bool ask_proxy);

  NetAudit& audit() { return audit_; }

  // Ends every relay (each reports the connections it cut) and writes the last records.
  void stop();

 private:
  Status start_forwarder();
  Status start_policy_proxy();
  Result<pid_t> start_forward_relay(const PortForward& forward, UniqueFd listener);
  std::string ask_proxy(uint16_t port, bool* answers);

  const SupervisorConfig& config_;
  Engine& engine_;
  UniqueFd events_read_, events_write_;
  std::string pending_;  // a partial event line
  NetAudit audit_{config_};
  pid_t forwarder_ = 0;
  pid_t proxy_ = 0;
  pid_t provision_proxy_ = 0;
  std::string inference_token_;  // what the gateway asks of a request before it adds the endpoint's key
  std::string provision_token_;  // the running provisioning proxy's credential (password of user "tnk")
  int provisioning_sessions_ = 0;
  std::map<uint16_t, std::pair<PortForward, pid_t>> forwards_;  // by host port
  bool stopping_ = false;
};

}  // namespace tnk::supervisor
