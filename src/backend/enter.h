// Entering a project's sandbox, whatever its backend: resolve it, start it when it is not running
// (creating it on first use), provision it when its profile's inputs changed, then run one session.
// `tnk sandbox start|shell|exec` and `tnk run` are each one call here.
#pragma once

#include <optional>
#include <string>

#include "audit/writer.h"
#include "context/context.h"
#include "core/result.h"
#include "sandbox/resolve.h"
#include "sandbox/session_spec.h"
#include "sandbox/start.h"

namespace tnk::backend {

struct EnterRequest {
  sandbox::ResolveOptions resolve;
  std::string audit_log;                        // --audit-log; empty: the config's `audit` setting
  std::optional<sandbox::SessionSpec> session;  // nullopt: start (and provision) only
  bool start_verb = false;                      // `start` (even with --shell) fails when provisioning fails
  bool reprovision = false;                     // start --reprovision
};

// Returns the session's exit status, or 0 after a start without one. A failed provisioning run
// fails a start; `shell` and `exec` still run their session in the (usable) sandbox, after a warning.
Result<int> enter(Context& ctx, const EnterRequest& request);

// A sandbox that a command stopped to change its files (restore, discard) started again: the one the
// cwd and --sandbox select, in review mode when `review`. `what` names the command in the error.
Status start_again(Context& ctx, const std::string& audit_log, bool review, const std::string& what);

// `tnk sandbox start -n` and `tnk run -n`: the plan, changing nothing.
Result<sandbox::StartPlan> start_plan(Context& ctx, const sandbox::ResolveOptions& options);

}  // namespace tnk::backend
