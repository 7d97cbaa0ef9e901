// One session as every backend runs it: what the user asked for (argv, -e, tty, identity), the
// contract's environment, and the audit records around it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "audit/writer.h"
#include "context/context.h"
#include "sandbox/resolve.h"
#include "session/protocol.h"

namespace tnk::sandbox {

struct SessionSpec {
  std::vector<std::string> argv;
  std::vector<std::string> user_env;  // -e KEY=VALUE (values never audited)
  bool tty = false;
  session::Identity identity = session::Identity::kAgent;
  bool provisioning = false;              // a phase of provisioning (session::ExecRequest says what that changes)
  std::vector<std::string> egress_allow;  // provisioning: what its proxy lets through
  bool egress_any = false;                // provisioning under `network.provision: open`
};

// The environment of the contract: TERM, COLORTERM, COLUMNS, LINES, LANG from the host, the TNK_*
// runtime values, then -e. Nothing else of the host's environment.
std::vector<std::string> session_environment(const Env& host, const Resolved& resolved,
                                             const std::vector<std::string>& user_env);

// session_start and exec_invocation (with the names of the -e variables, never their values). Fails
// when a record of this command could not be written, so that no session runs unaudited.
Status audit_session_start(std::optional<audit::AuditWriter>& audit, const Resolved& resolved, const std::string& cwd,
                           const SessionSpec& spec);
// session_exit for an exit status as shells report it: 128+N means killed by signal N.
void audit_session_exit(std::optional<audit::AuditWriter>& audit, const Resolved& resolved, int status);
// The session's end was never seen (`why`): its record says so, so that no session_start is left open.
void audit_session_lost(std::optional<audit::AuditWriter>& audit, const Resolved& resolved, const std::string& why);

}  // namespace tnk::sandbox
