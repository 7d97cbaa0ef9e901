// Stopping and deleting sandboxes by id, whatever their backends: `tnk sandbox stop|delete` and
// `tnk shutdown`. A sandbox whose record cannot be read can still be stopped and deleted.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "context/context.h"
#include "core/result.h"
#include "state/record.h"

namespace tnk::backend {

// A sandbox named on the command line: its record, or why the record could not be read.
struct Target {
  std::string id;
  std::optional<state::SandboxRecord> record;  // nullopt: the record is unreadable (corrupt)
};

// The sandboxes that exist among `ids`. An unreadable record is a target too (delete must be able
// to remove it); a missing one is skipped, with a warning when the user named it.
Result<std::vector<Target>> existing_targets(Context& ctx, const std::vector<std::string>& ids, bool warn_missing);

// Stops every target that runs, all at once (each gets the whole grace period), writing
// sandbox_stop for each; one that cannot be stopped does not keep the others running.
Status stop_targets(Context& ctx, const std::vector<Target>& targets, bool dry_run, std::chrono::seconds grace,
                    const std::string& reason);

// Stops the sandbox `id` (that exists) for `reason`, as stop_targets does.
Status stop_by_id(Context& ctx, const std::string& id, const std::string& reason);

// Stops the target if it runs, then removes it: what its backend keeps outside the state
// directory, then the state directory. Never the project. Writes sandbox_delete.
Status delete_target(Context& ctx, const Target& target, std::chrono::seconds grace);

}  // namespace tnk::backend
