#include "backend/agent_ping.h"

#include <chrono>

#include "backend/registry.h"
#include "session/control_client.h"
#include "state/layout.h"
#include "state/store.h"

namespace tnk::backend {

Result<AgentPings> agent_pings(Context& ctx, const sandbox::ResolveOptions& options, int count) {
  TNK_ASSIGN_OR_RETURN(sandbox::Resolved r, backend::resolve(ctx, options));
  TNK_ASSIGN_OR_RETURN(auto opened, open_backend(ctx, r.backend));
  if (r.state != state::SandboxState::kRunning || !opened->capabilities().agent_ping) {
    return usage_error("sandbox " + r.id + " is not a running vm sandbox", "start it: tnk sandbox start --backend vm");
  }
  auto ctl = state::Store(ctx.paths.sandboxes_dir()).file(r.id, state::kControlSocket);
  auto timeout = std::chrono::seconds(10) + std::chrono::seconds(1) * count;  // 1 s per ping at most
  TNK_ASSIGN_OR_RETURN(std::vector<int64_t> rtts, session::request_agent_pings(ctl, count, timeout));
  return AgentPings{r.id, std::move(rtts)};
}

}  // namespace tnk::backend
