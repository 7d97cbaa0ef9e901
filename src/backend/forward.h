// `tnk sandbox forward`: port forwards from the host's 127.0.0.1 into a running sandbox, kept by
// its supervisor for the sandbox's lifetime.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "context/context.h"
#include "core/result.h"
#include "net/policy.h"
#include "sandbox/resolve.h"

namespace tnk::backend {

struct ForwardChanges {
  std::vector<uint16_t> remove;  // host ports
  std::vector<PortForward> add;
};

struct Forwards {
  std::string id;          // the sandbox
  nlohmann::json current;  // [{host_port, guest_port}], after the changes
};

// Removes, then adds; a usage error when the sandbox's backend cannot forward or it does not run.
Result<Forwards> forward(Context& ctx, const sandbox::ResolveOptions& options, const ForwardChanges& changes);

}  // namespace tnk::backend
