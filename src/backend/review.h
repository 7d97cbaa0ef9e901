// Review mode's verbs (docs/workspace.md): what a sandbox's review layer changes in its project
// (`tnk sandbox diff`), writing it there (`apply`), dropping it (`discard`). The logic is review/'s;
// this module finds the sandbox, takes its lock, keeps apply and discard to a stopped sandbox, and
// writes their audit records.
#pragma once

#include <string>
#include <vector>

#include "context/context.h"
#include "core/result.h"
#include "review/apply.h"
#include "review/diff.h"

namespace tnk::backend {

struct ReviewRequest {
  std::string id;                  // the current project's sandbox (cli::current_sandbox_id)
  std::vector<std::string> paths;  // PATH arguments as given (relative to ctx.cwd, or absolute)
  bool all = false;                // include what the project's .gitignore ignores
  std::string audit_log;           // --audit-log
};

struct DiffReport {
  std::vector<review::Change> changes;  // what the request selects (ignored ones only with --all)
  size_t ignored_hidden = 0;            // ignored changes left out
  bool git_aware = false;               // false: not a git work tree, nothing is treated as ignored
  bool running = false;                 // the sandbox runs: the layer may still change
};

Result<DiffReport> review_diff(Context& ctx, const ReviewRequest& request);

// Refuses when the sandbox runs, when a selected change's host path changed since the layer was made
// (naming each), and when a PATH selects nothing; writes nothing then.
Result<std::vector<review::Touched>> review_apply(Context& ctx, const ReviewRequest& request);

// Drops the whole layer (the sandbox must be stopped) and takes a new baseline of the project.
Result<std::vector<review::Touched>> review_discard(Context& ctx, const ReviewRequest& request);

nlohmann::json to_json(const review::Change& change);
nlohmann::json to_json(const std::vector<review::Touched>& touched);

}  // namespace tnk::backend
