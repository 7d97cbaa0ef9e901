#include "supervisor/ssh_command.h"

#include "net/base64.h"
#include "net/ssh_wire.h"

namespace tnk::supervisor {

std::string ssh_known_hosts_line(const net::SshRoute& route) {
  std::string host = route.port == 22 ? route.host : "[" + route.host + "]:" + std::to_string(route.port);
  return host + " " + net::ssh_blob_type(route.host_key) + " " + net::base64_encode(route.host_key);
}

std::string git_ssh_command(const std::vector<net::SshRoute>& routes, const std::string& proxy_host,
                            uint16_t proxy_port) {
  // Run by ssh as sh -c "exec <this>" with %h and %p replaced (ssh turns %% into %). It asks the proxy for a
  // tunnel, reads its answer's head a byte at a time (bash reads a socket so), then passes bytes both ways.
  std::string script =
      "exec 3<>/dev/tcp/" + proxy_host + "/" + std::to_string(proxy_port) +
      " || exit 1; "
      "printf \"CONNECT %%s:%%s HTTP/1.1\\r\\nHost: %%s:%%s\\r\\n\\r\\n\" \"$1\" \"$2\" \"$1\" \"$2\" >&3; "
      "read -r _ code _ <&3; "
      "[ \"$code\" = 200 ] || { echo \"tnk: the egress proxy refused $1:$2 ($code)\" >&2; exit 1; }; "
      "while read -r line <&3 && [ ${#line} -gt 1 ]; do :; done; "
      "cat <&3 & exec cat >&3";
  std::string proxy = "ProxyCommand=/bin/bash -c '\\''" + script + "'\\'' tnk-ssh-proxy %h %p";
  std::string known = "KnownHostsCommand=/usr/bin/printf \"%%s\\n\"";
  for (const net::SshRoute& route : routes) known += " \"" + ssh_known_hosts_line(route) + "\"";
  return "ssh -o '" + proxy + "' -o '" + known + "'";
}

}  // namespace tnk::supervisor
