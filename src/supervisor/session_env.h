// The environment a session starts with: what the client sent (the allow-listed host variables,
// the TNK_* runtime values and -e), on top of the account's own defaults inside the sandbox.
#pragma once

#include <string>
#include <vector>

#include "session/protocol.h"

namespace tnk::supervisor {

// `extra` (e.g. the provisioning proxy) wins over the defaults; the request wins over both.
std::vector<std::string> session_env(const session::ExecRequest& request, const std::vector<std::string>& extra);

}  // namespace tnk::supervisor
