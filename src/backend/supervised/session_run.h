// One session in a running ns or vm sandbox: the request sent to its supervisor over ctl.sock,
// the audit records around it, and the exit status.
#pragma once

#include <optional>
#include <string>

#include "audit/writer.h"
#include "context/context.h"
#include "core/result.h"
#include "core/unique_fd.h"
#include "sandbox/resolve.h"
#include "sandbox/session_spec.h"
#include "session/client.h"
#include "session/protocol.h"

namespace tnk::supervised {

session::ExecRequest exec_request(Context& ctx, const sandbox::Resolved& resolved, const sandbox::SessionSpec& spec);

// Runs the session and returns its exit status (127 when the program does not exist). When a stop of
// the sandbox ended the session, it sets *sandbox_stopped when given, else warns so.
Result<int> run_session(Context& ctx, const sandbox::Resolved& resolved, const sandbox::SessionSpec& spec,
                        std::optional<audit::AuditWriter>& audit, const session::ClientOptions& options = {},
                        bool* sandbox_stopped = nullptr);

// The control socket of a running sandbox, connected; a clear error when it is not running.
Result<UniqueFd> connect_sandbox(Context& ctx, const std::string& id);

}  // namespace tnk::supervised
