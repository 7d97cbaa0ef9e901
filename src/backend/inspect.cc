#include "backend/inspect.h"

#include <chrono>

#include "backend/protection.h"
#include "backend/registry.h"
#include "session/control_client.h"
#include "state/layout.h"
#include "state/store.h"

namespace tnk::backend {

Result<Inspection> inspect(Context& ctx, const sandbox::ResolveOptions& options) {
  Inspection seen;
  TNK_ASSIGN_OR_RETURN(seen.resolved, backend::resolve(ctx, options));
  const sandbox::Resolved& r = seen.resolved;
  // Inspecting only reads: a backend this build lacks is a note, not an error.
  auto opened = open_backend(ctx, r.backend);
  if (!opened) {
    seen.resolved.notes.push_back(opened.error().message);
    return seen;
  }
  seen.network_limits = (*opened)->network_limits(r);
  seen.protected_paths = protection_of(ctx, r, (*opened)->capabilities().protected_paths);
  if (r.state == state::SandboxState::kRunning && (*opened)->capabilities().running_network) {
    auto ctl = state::Store(ctx.paths.sandboxes_dir()).file(r.id, state::kControlSocket);
    auto network = session::request_network(ctl, session::network_op(false), std::chrono::seconds(5));
    if (network) {
      seen.running_network = *network;
    } else {
      ctx.log.warn("cannot ask " + r.id + " for its network: " + network.error().message);
    }
  }
  return seen;
}

}  // namespace tnk::backend
