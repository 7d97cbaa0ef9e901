// One session in a running sandbox, from the command line: the request (argv, the contract's
// environment, the cwd inside), the audit records around it, and the exit status.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "audit/writer.h"
#include "cli/context.h"
#include "core/result.h"
#include "sandbox/resolve.h"
#include "session/client.h"
#include "session/protocol.h"

namespace tnk::sandbox {

struct SessionSpec {
  std::vector<std::string> argv;
  std::vector<std::string> user_env;  // -e KEY=VALUE (values never audited)
  bool tty = false;
  session::Identity identity = session::Identity::kAgent;
  std::vector<std::string> egress_allow;  // provisioning: what its proxy lets through
  bool egress_any = false;                // provisioning under `network.provision: open`
};

// The environment of the contract: TERM, COLORTERM, COLUMNS, LINES, LANG from the host, the TNK_*
// runtime values, then -e. Nothing else of the host's environment.
std::vector<std::string> session_environment(const Env& host, const Resolved& resolved,
                                             const std::vector<std::string>& user_env);

session::ExecRequest exec_request(Context& ctx, const Resolved& resolved, const SessionSpec& spec);

// Runs the session and returns its exit status (127 when the program does not exist).
Result<int> run_session(Context& ctx, const Resolved& resolved, const SessionSpec& spec,
                        std::optional<audit::AuditWriter>& audit, const session::ClientOptions& options = {});

// The control socket of a running sandbox, connected; a clear error when it is not running.
Result<UniqueFd> connect_sandbox(Context& ctx, const std::string& id);

}  // namespace tnk::sandbox
