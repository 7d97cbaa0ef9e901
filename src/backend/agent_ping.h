// `tnk sandbox agent-ping` (hidden, for bench/vm.sh): round trips of the guest agent's ping frame,
// sent by a running sandbox's supervisor over the one agent connection it owns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "context/context.h"
#include "core/result.h"
#include "sandbox/resolve.h"

namespace tnk::backend {

struct AgentPings {
  std::string id;
  std::vector<int64_t> rtt_us;  // in the order sent
};

// A usage error when the sandbox does not run or its backend has no guest agent.
Result<AgentPings> agent_pings(Context& ctx, const sandbox::ResolveOptions& options, int count);

}  // namespace tnk::backend
