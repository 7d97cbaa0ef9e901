// `tnk sandbox checkpoint`, `checkpoints`, `checkpoint rm` and `restore` (docs/checkpoints.md): copies of
// a sandbox's own state (backend/own_state.h) at one moment, kept in its state directory, and the
// sandbox put back to one of them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "context/context.h"
#include "core/result.h"

namespace tnk::backend {

struct Checkpoint {
  std::string name;
  int64_t created_at = 0;    // Unix seconds
  bool was_running = false;  // the sandbox ran (and was held still for the copy)
  nlohmann::json entries;    // own_state.h's description of what it holds
  uint64_t bytes = 0;        // their sum, but for the base disk it links
};

struct CheckpointRequest {
  std::string id;         // the sandbox
  std::string name;       // empty: the time, as YYYYMMDD-HHMMSS
  std::string audit_log;  // --audit-log
};

Result<Checkpoint> make_checkpoint(Context& ctx, const CheckpointRequest& request);
// Newest first.
Result<std::vector<Checkpoint>> list_checkpoints(Context& ctx, const std::string& id);
Status remove_checkpoint(Context& ctx, const CheckpointRequest& request);
// A running sandbox is stopped, put back, and started again (ns keeps no processes: docs/checkpoints.md).
Result<Checkpoint> restore_checkpoint(Context& ctx, const CheckpointRequest& request);

// The checkpoint `name` of sandbox `id`, read (for fork --from).
Result<Checkpoint> find_checkpoint(Context& ctx, const std::string& id, const std::string& name);
// Where checkpoint `name` of `id` keeps its state directory's copy.
std::filesystem::path checkpoint_dir(Context& ctx, const std::string& id, const std::string& name);

nlohmann::json to_json(const Checkpoint& checkpoint);

}  // namespace tnk::backend
