// `tnk sandbox inspect`: how the current project's sandbox resolves, what its backend cannot enforce
// of its network policy, and what the running sandbox reports of its network.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "context/context.h"
#include "core/result.h"
#include "sandbox/resolve.h"
#include "state/protection.h"

namespace tnk::backend {

struct Inspection {
  sandbox::Resolved resolved;
  std::vector<std::string> network_limits;
  // What the supervisor of a running sandbox says (policy, proxy, forwards): the effective policy,
  // which a changed manifest does not change until the next start. Null when it does not run, or
  // when its backend has no supervisor to ask.
  nlohmann::json running_network;
  std::vector<state::ProtectedPath> protected_paths;  // mounts.readonly and what each is (backend/protection.h)
};

Result<Inspection> inspect(Context& ctx, const sandbox::ResolveOptions& options);

}  // namespace tnk::backend
