// tnk sandbox forward: port forwards from the host's 127.0.0.1 into a running sandbox, for its lifetime.
#include <iostream>

#include "backend/forward.h"
#include "cli/sandbox_verbs.h"
#include "net/policy.h"

namespace tnk::cli {
namespace {

struct ForwardFlags {
  SandboxFlags sandbox;
  std::vector<std::string> specs;  // HOSTPORT:GUESTPORT or PORT
  std::vector<unsigned> remove;
};

void print_forwards(std::ostream& os, const std::string& id, const nlohmann::json& forwards) {
  if (forwards.empty()) {
    os << "no port forwards into " << id << "\n";
    return;
  }
  for (const auto& f : forwards) {
    os << "127.0.0.1:" << f.value("host_port", 0) << " -> " << id << ":" << f.value("guest_port", 0) << "\n";
  }
}

Result<int> run_forward(Context& ctx, const ForwardFlags& flags) {
  backend::ForwardChanges changes;
  for (unsigned port : flags.remove) {
    if (port < 1 || port > 65535) return usage_error("--remove needs a host port from 1 to 65535");
    changes.remove.push_back(static_cast<uint16_t>(port));
  }
  for (const auto& spec : flags.specs) {
    TNK_ASSIGN_OR_RETURN(PortForward forward, parse_port_forward(spec));
    changes.add.push_back(forward);
  }
  TNK_ASSIGN_OR_RETURN(backend::Forwards forwards, backend::forward(ctx, flags.sandbox.resolve_options(), changes));
  ctx.out.list(forwards.current, [&](std::ostream& os) { print_forwards(os, forwards.id, forwards.current); });
  return kExitOk;
}

}  // namespace

void add_network_commands(CLI::App& sandbox, CommandTable& table) {
  auto* forward = sandbox.add_subcommand("forward", "Forward a port of the host's 127.0.0.1 into the sandbox");
  describe(*forward,
           "Forward HOSTPORT on the host's 127.0.0.1 (never another address) to GUESTPORT on the sandbox's own "
           "loopback, until the sandbox stops. Without arguments, list the forwards. Each connection is a "
           "net_allow record in the audit log. Forwards that should exist from every start go under `ports:` "
           "in the profile's manifest.",
           "tnk sandbox forward 8080:3000");
  auto flags = std::make_shared<ForwardFlags>();
  add_sandbox_flags(*forward, flags->sandbox, false);
  forward->add_option("FORWARD", flags->specs, "HOSTPORT:GUESTPORT, or PORT for the same port on both sides");
  forward->add_option("--remove", flags->remove, "Remove the forward on this host port (repeatable)")
      ->type_name("HOSTPORT");
  table.add(forward, [flags](Context& ctx) { return run_forward(ctx, *flags); });
}

}  // namespace tnk::cli
