// `tnk sandbox fork` (docs/checkpoints.md): N new sandboxes from one, each a copy of its own state (as
// it is, or as a checkpoint kept it) in review mode over the same project, each started with its own
// supervisor, policy, tokens and audit log, and selected with `--sandbox <id>.<n>`.
#pragma once

#include <string>
#include <vector>

#include "context/context.h"
#include "core/result.h"

namespace tnk::backend {

struct ForkRequest {
  int count = 1;                         // -n
  std::string from;                      // --from: a checkpoint's name; empty: the sandbox as it is now
  std::string audit_log;                 // --audit-log
  std::vector<std::string> start_flags;  // --profile/--network, as each fork's start is given them
};

struct ForkReport {
  std::string parent;
  std::string from;  // the checkpoint, or empty
  std::vector<std::string> forks;
};

Result<ForkReport> fork_sandbox(Context& ctx, const ForkRequest& request);

}  // namespace tnk::backend
