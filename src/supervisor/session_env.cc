#include "supervisor/session_env.h"

#include <map>

namespace tnk::supervisor {

std::vector<std::string> session_env(const session::ExecRequest& request, const std::vector<std::string>& extra) {
  bool root = request.identity == session::Identity::kRoot;
  // Nothing provisioning runs by name may come from a directory the agent can write (security review
  // M3: a planted ~/.local/bin/sh ran as the provisioning identity, which could sudo).
  bool provisioning = request.provisioning;
  std::map<std::string, std::string> env = {
      {"HOME", root ? "/root" : "/home/agent"},
      {"USER", root ? "root" : "agent"},
      {"LOGNAME", root ? "root" : "agent"},
      {"SHELL", "/bin/bash"},
      {"PATH", root || provisioning ? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
                                    : "/home/agent/.local/bin:/usr/local/bin:/usr/bin:/bin"},
      {"LANG", "C.UTF-8"},
      // Node keeps its own CA list; point it at the system's, which holds the host's local CAs too.
      {"NODE_EXTRA_CA_CERTS", "/etc/ssl/certs/ca-certificates.crt"},
      {"TERM", request.tty ? "xterm-256color" : "dumb"},
  };
  for (const auto* list : {&extra, &request.env}) {
    for (const auto& kv : *list) {
      auto eq = kv.find('=');
      if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  std::vector<std::string> out;
  for (const auto& [key, value] : env) out.push_back(key + "=" + value);
  return out;
}

}  // namespace tnk::supervisor
