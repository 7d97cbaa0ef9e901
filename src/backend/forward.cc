#include "backend/forward.h"

#include <chrono>

#include "backend/registry.h"
#include "session/control_client.h"
#include "state/layout.h"
#include "state/store.h"

namespace tnk::backend {
namespace {

constexpr std::chrono::seconds kNetworkOpTimeout{5};

}  // namespace

Result<Forwards> forward(Context& ctx, const sandbox::ResolveOptions& options, const ForwardChanges& changes) {
  TNK_ASSIGN_OR_RETURN(sandbox::Resolved r, backend::resolve(ctx, options));
  TNK_ASSIGN_OR_RETURN(auto opened, open_backend(ctx, r.backend));
  if (!opened->capabilities().port_forwards) {
    return usage_error(std::string("tnk sandbox forward does not run on the ") + to_string(r.backend) + " backend",
                       "list the port under `ports:` in the profile's manifest; Lima forwards it at start");
  }
  if (r.state != state::SandboxState::kRunning) {
    return usage_error("sandbox " + r.id + " is not running", "start it first: tnk sandbox start");
  }
  auto ctl = state::Store(ctx.paths.sandboxes_dir()).file(r.id, state::kControlSocket);
  nlohmann::json network;
  for (uint16_t port : changes.remove) {
    TNK_ASSIGN_OR_RETURN(network, session::request_network(ctl, session::unforward_op(port), kNetworkOpTimeout));
    ctx.log.info("removed the forward from 127.0.0.1:" + std::to_string(port));
  }
  for (const PortForward& f : changes.add) {
    TNK_ASSIGN_OR_RETURN(
        network, session::request_network(ctl, session::forward_op(f.host_port, f.guest_port), kNetworkOpTimeout));
  }
  if (network.is_null()) {
    TNK_ASSIGN_OR_RETURN(network, session::request_network(ctl, session::network_op(false), kNetworkOpTimeout));
  }
  return Forwards{r.id, network.value("forwards", nlohmann::json::array())};
}

}  // namespace tnk::backend
