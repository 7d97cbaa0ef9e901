// A sandbox's network as its policy says (docs/network.md): the inference forwarder, the egress proxy
// of `allowlist` and `open`, the provisioning proxy while provisioning runs, the port forwards, the
// route gateway, the SSH routes' agent, the audit records of every decision they make (net_allow, net_deny,
// route_request, ssh_sign), and
// the refusals pending the host user's approval. Owned by the Server and, like it, single-threaded: the
// relays are child processes, their decisions arrive as lines on one pipe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/unique_fd.h"
#include "net/live_policy.h"
#include "net/pending_requests.h"
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

  // The host user's rules (`tnk sandbox allow`, `deny`): `rules` replace the running ones, the proxy
  // decides by the new policy before this returns and cuts what it no longer allows, and the change is a
  // policy_change record. A usage error under a policy without an allow-list. (network_policy.cc)
  struct PolicyChange {
    std::string action, rule, who;
    std::optional<int64_t> until_ms;
  };
  Result<nlohmann::json> change_policy(std::vector<net::LiveRule> rules, const PolicyChange& change);
  // Ends the rules whose time has come (each a policy_change record); next_expiry() says when to call.
  void expire_rules();
  std::optional<int64_t> next_expiry() const { return net::next_expiry(rules_); }
  // {"policy", "hash", "allow", "deny", "profile_allow", "rules"}: the policy in force.
  nlohmann::json describe_policy() const;
  // {"policy", "requests"}: the refusals the host user may approve (net/pending_requests.h), oldest first;
  // a change of the policy drops those it decides.
  nlohmann::json describe_pending() const;

  // Ends every relay (each reports the connections it cut) and writes the last records.
  void stop();

 private:
  Status start_forwarder();
  Status start_policy_proxy();
  Status start_route_gateway();
  Status start_ssh_agent();
  std::vector<std::string> routes_env() const;
  Result<pid_t> start_forward_relay(const PortForward& forward, UniqueFd listener);
  std::string ask_proxy(uint16_t port, bool* answers);
  net::PolicyInForce in_force() const;
  std::vector<std::string> ssh_route_entries() const;
  // Puts `rules` in force (the proxy's lists) and writes the policy_change record; returns the cut count.
  uint64_t apply_rules(std::vector<net::LiveRule> rules, const PolicyChange& change);
  // Keeps a relay line's refusal as pending when it is the policy proxy's and an allow rule would lift it.
  void note_refusal(const nlohmann::json& line);

  const SupervisorConfig& config_;
  Engine& engine_;
  UniqueFd events_read_, events_write_;
  std::string pending_;  // a partial event line
  NetAudit audit_{config_};
  pid_t forwarder_ = 0;
  pid_t proxy_ = 0;
  UniqueFd proxy_policy_;                                          // the supervisor's end of the proxy's policy channel
  std::vector<net::LiveRule> rules_{config_.live_rules};           // the host user's rules in force
  net::PendingRequests pending_requests_{std::random_device{}()};  // IDs drawn anew at each start
  pid_t provision_proxy_ = 0;
  std::string inference_token_;  // what the gateway asks of a request before it adds the endpoint's key
  pid_t routes_ = 0;             // the route gateway, when tnk.toml has [[routes]]
  pid_t ssh_agent_ = 0;          // the SSH agent, when the config has SSH routes
  std::string provision_token_;  // the running provisioning proxy's credential (password of user "tnk")
  int provisioning_sessions_ = 0;
  std::map<uint16_t, std::pair<PortForward, pid_t>> forwards_;  // by host port
  bool stopping_ = false;
};

}  // namespace tnk::supervisor
