// tnk sandbox agent-ping: a hidden debugging verb (bench/vm.sh) that asks a running vm sandbox's
// supervisor for round trips of the guest agent's ping over the one agent connection it owns.
#include <algorithm>

#include "backend/agent_ping.h"
#include "cli/sandbox_verbs.h"
#include "session/control_client.h"

namespace tnk::cli {
namespace {

struct AgentPingFlags {
  SandboxFlags sandbox;
  int count = 100;
};

Result<int> run_agent_ping(Context& ctx, const AgentPingFlags& flags) {
  TNK_ASSIGN_OR_RETURN(backend::AgentPings pings,
                       backend::agent_pings(ctx, flags.sandbox.resolve_options(), flags.count));
  const std::vector<int64_t>& rtts = pings.rtt_us;
  std::vector<int64_t> sorted = rtts;
  std::sort(sorted.begin(), sorted.end());
  int64_t median = sorted[sorted.size() / 2];
  nlohmann::json doc = {{"sandbox", pings.id}, {"count", rtts.size()}, {"median_us", median}, {"rtt_us", rtts}};
  ctx.out.document(doc, [&](std::ostream& os) {
    os << "agent ping round trip over " << rtts.size() << " pings: median " << median << " us, min " << sorted.front()
       << " us, max " << sorted.back() << " us\n";
  });
  return kExitOk;
}

}  // namespace

void add_debug_commands(CLI::App& sandbox, CommandTable& table) {
  auto* ping = sandbox.add_subcommand("agent-ping", "Time round trips to a vm sandbox's guest agent (debugging)");
  ping->group("");  // hidden: a debugging aid for bench/vm.sh, not part of the interface
  describe(*ping,
           "Ask the running vm sandbox's supervisor to send COUNT ping frames, one after another, to the guest "
           "agent over its connection, and print the round trips (microseconds). The supervisor answers nothing "
           "else meanwhile.",
           "tnk sandbox agent-ping --count 200 -o json");
  auto flags = std::make_shared<AgentPingFlags>();
  add_sandbox_flags(*ping, flags->sandbox, false);
  ping->add_option("--count", flags->count, "How many pings")->check(CLI::Range(1, session::kMaxAgentPings));
  table.add(ping, [flags](Context& ctx) { return run_agent_ping(ctx, *flags); });
}

}  // namespace tnk::cli
