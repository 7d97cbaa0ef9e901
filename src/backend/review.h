// Review mode's verbs (docs/workspace.md): what a sandbox's review layer changes in its project
// (`tnk sandbox diff`, its lines with `--patch`), writing it there (`apply`), dropping it (`discard`).
// The logic is review/'s; this module finds the sandbox, takes its lock, keeps discard to a stopped
// sandbox, and writes their audit records.
#pragma once

#include <string>
#include <vector>

#include "context/context.h"
#include "core/result.h"
#include "review/apply.h"
#include "review/diff.h"
#include "review/patch.h"

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

struct PatchReport {
  std::vector<review::PatchLine> lines;  // the selected changes as a unified diff (review/patch.h)
  size_t ignored_hidden = 0;
  bool running = false;
};

// What review_diff selects, as the changed lines.
Result<PatchReport> review_patch(Context& ctx, const ReviewRequest& request);

// Refuses when a selected change's host path changed since the layer was made (naming each), and when
// a PATH selects nothing; writes nothing then. Works while the sandbox runs: the layer is then left as
// it is (review::LayerAfter::kKept).
Result<std::vector<review::Touched>> review_apply(Context& ctx, const ReviewRequest& request);

// Drops the whole layer and takes a new baseline of the project; with PATHs, what the layer holds at
// and below them (ignored paths too) and stamps them afresh. The sandbox must be stopped.
Result<std::vector<review::Touched>> review_discard(Context& ctx, const ReviewRequest& request);

nlohmann::json to_json(const review::Change& change);
nlohmann::json to_json(const std::vector<review::Touched>& touched);

}  // namespace tnk::backend
