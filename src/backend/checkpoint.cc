#include "backend/checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>

#include "audit/events.h"
#include "backend/enter.h"
#include "backend/own_state.h"
#include "backend/stop.h"
#include "core/file_lock.h"
#include "core/files.h"
#include "core/json_fields.h"
#include "core/phase_timer.h"
#include "image/tree.h"
#include "naming/naming.h"
#include "review/layer.h"
#include "sandbox/audit_target.h"
#include "state/layout.h"
#include "state/own_disk.h"
#include "state/store.h"

namespace tnk::backend {
namespace {

namespace fs = std::filesystem;

std::string time_name(int64_t now) {
  std::time_t t = static_cast<std::time_t>(now);
  std::tm utc{};
  ::gmtime_r(&t, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &utc);
  return buf;
}

// What the copy adds on disk: not the base disk, which it links.
uint64_t own_bytes(const nlohmann::json& entries) {
  uint64_t bytes = 0;
  for (const auto& entry : entries) {
    if (!entry.value("shared", false)) bytes += entry.value("bytes", uint64_t{0});
  }
  return bytes;
}

Result<Checkpoint> read_checkpoint(const fs::path& dir) {
  const fs::path file = dir / state::kCheckpointFile;
  TNK_ASSIGN_OR_RETURN(std::string text, read_file(file));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return failed(file.string() + " is not a JSON object", "remove the checkpoint and make it again");
  JsonFields f(j, "checkpoint " + file.string());
  Checkpoint c;
  TNK_ASSIGN_OR_RETURN(c.name, f.string("name"));
  TNK_ASSIGN_OR_RETURN(c.created_at, f.integer("created_at"));
  TNK_ASSIGN_OR_RETURN(c.was_running, f.optional_boolean("was_running", false));
  c.entries = j.value("entries", nlohmann::json::array());
  c.bytes = own_bytes(c.entries);
  return c;
}

// The sandbox's lock, or not_found when it does not exist.
Result<FileLock> lock_sandbox(Context& ctx, const std::string& id) {
  state::Store store(ctx.paths.sandboxes_dir());
  TNK_ASSIGN_OR_RETURN(std::optional<FileLock> lock, store.lock_existing(id, ctx.log));
  if (!lock) return not_found("sandbox " + id + " does not exist", "`tnk sandbox start` creates it");
  return std::move(*lock);
}

Status write_audit(Context& ctx, const CheckpointRequest& request, const nlohmann::json& record) {
  state::Store store(ctx.paths.sandboxes_dir());
  TNK_ASSIGN_OR_RETURN(auto loaded, store.load(request.id));
  fs::path project = loaded ? loaded->project_dir : fs::path();
  return sandbox::audit_record(ctx, request.audit_log, request.id, project, record);
}

// What a checkpoint covered, for its audit record.
nlohmann::json covered(const Checkpoint& c) { return {{"name", c.name}, {"entries", c.entries}}; }

// Puts the checkpoint's copy in place of the sandbox's own state: copied beside it first, so that a
// copy that fails (a full disk) leaves the sandbox as it was.
Status put_back(Context& ctx, const std::string& id, const fs::path& from) {
  state::Store store(ctx.paths.sandboxes_dir());
  // On a disk of its own, beside the layers on that disk: moved into place, never copied twice.
  TNK_RETURN_IF_ERROR(state::mount_own_disk(store.dir(id)));
  const fs::path staging =
      store.dir(id) / (state::has_own_disk(store.dir(id)) ? state::kOwnDiskDir : "") / ".restoring";
  TNK_RETURN_IF_ERROR(image::remove_owned_tree(staging));  // what a restore cut short left
  auto copied = copy_own_state(from, staging);
  if (!copied) {
    (void)image::remove_owned_tree(staging);
    return copied.error();
  }
  TNK_RETURN_IF_ERROR(remove_own_state(store.dir(id)));
  TNK_RETURN_IF_ERROR(move_own_state(staging, store.dir(id)));
  return image::remove_owned_tree(staging);
}

}  // namespace

fs::path checkpoint_dir(Context& ctx, const std::string& id, const std::string& name) {
  return state::Store(ctx.paths.sandboxes_dir()).dir(id) / state::kCheckpointsDir / name;
}

Result<Checkpoint> make_checkpoint(Context& ctx, const CheckpointRequest& request) {
  Checkpoint c;
  c.created_at = static_cast<int64_t>(std::time(nullptr));
  c.name = request.name.empty() ? time_name(c.created_at) : request.name;
  TNK_RETURN_IF_ERROR(naming::validate_checkpoint_name(c.name));
  TNK_ASSIGN_OR_RETURN(FileLock lock, lock_sandbox(ctx, request.id));
  const fs::path final_dir = checkpoint_dir(ctx, request.id, c.name);
  std::error_code ec;
  if (fs::exists(final_dir, ec)) {
    return failed("sandbox " + request.id + " has a checkpoint named " + c.name + " already",
                  "choose another name, or `tnk sandbox checkpoint rm " + c.name + "` first");
  }
  const fs::path partial = final_dir.parent_path() / ("." + c.name + ".partial");
  TNK_RETURN_IF_ERROR(image::remove_owned_tree(partial));  // what a checkpoint cut short left
  state::Store store(ctx.paths.sandboxes_dir());
  {
    TNK_ASSIGN_OR_RETURN(std::optional<UniqueFd> held, hold_still(ctx, request.id));
    c.was_running = held.has_value();
    mark_phase("hold still");
    TNK_RETURN_IF_ERROR(state::mount_own_disk(store.dir(request.id)));
    auto entries = copy_own_state(store.dir(request.id), partial);
    if (!entries) {
      (void)image::remove_owned_tree(partial);
      return entries.error().context("checkpoint " + c.name + " of " + request.id);
    }
    c.entries = std::move(*entries);
  }  // the sandbox goes on
  if (c.entries.empty()) {
    (void)image::remove_owned_tree(partial);
    return failed("sandbox " + request.id + " has nothing of its own to keep yet", "start it first");
  }
  c.bytes = own_bytes(c.entries);
  TNK_RETURN_IF_ERROR(write_file_atomic(partial / state::kCheckpointFile, to_json(c).dump(2) + "\n"));
  if (::rename(partial.c_str(), final_dir.c_str()) != 0) {
    return sys_error(errno, "cannot move checkpoint " + c.name + " into place at " + final_dir.string());
  }
  TNK_RETURN_IF_ERROR(write_audit(ctx, request, audit::sandbox_checkpoint(request.id, "checkpoint", covered(c))));
  return c;
}

Result<std::vector<Checkpoint>> list_checkpoints(Context& ctx, const std::string& id) {
  state::Store store(ctx.paths.sandboxes_dir());
  TNK_ASSIGN_OR_RETURN(auto record, store.load(id));
  if (!record) return not_found("sandbox " + id + " does not exist", "`tnk sandbox start` creates it");
  std::vector<Checkpoint> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(store.dir(id) / state::kCheckpointsDir, ec)) {
    if (entry.path().filename().string().starts_with('.')) continue;  // one being made, or cut short
    auto c = read_checkpoint(entry.path());
    if (!c) {
      ctx.log.warn(c.error().message);
      continue;
    }
    found.push_back(std::move(*c));
  }
  std::sort(found.begin(), found.end(), [](const Checkpoint& a, const Checkpoint& b) {
    return a.created_at != b.created_at ? a.created_at > b.created_at : a.name > b.name;
  });
  return found;
}

Result<Checkpoint> find_checkpoint(Context& ctx, const std::string& id, const std::string& name) {
  TNK_RETURN_IF_ERROR(naming::validate_checkpoint_name(name));
  const fs::path dir = checkpoint_dir(ctx, id, name);
  std::error_code ec;
  if (!fs::exists(dir / state::kCheckpointFile, ec)) {
    return not_found("sandbox " + id + " has no checkpoint named " + name, "`tnk sandbox checkpoints` lists them");
  }
  return read_checkpoint(dir);
}

Status remove_checkpoint(Context& ctx, const CheckpointRequest& request) {
  TNK_ASSIGN_OR_RETURN(Checkpoint c, find_checkpoint(ctx, request.id, request.name));
  TNK_ASSIGN_OR_RETURN(FileLock lock, lock_sandbox(ctx, request.id));
  const fs::path dir = checkpoint_dir(ctx, request.id, request.name);
  const fs::path doomed = dir.parent_path() / ("." + request.name + ".removing");
  if (::rename(dir.c_str(), doomed.c_str()) != 0) return sys_error(errno, "cannot remove " + dir.string());
  TNK_RETURN_IF_ERROR(image::remove_owned_tree(doomed));
  return write_audit(ctx, request, audit::sandbox_checkpoint(request.id, "remove", covered(c)));
}

Result<Checkpoint> restore_checkpoint(Context& ctx, const CheckpointRequest& request) {
  TNK_ASSIGN_OR_RETURN(Checkpoint c, find_checkpoint(ctx, request.id, request.name));
  const bool was_running = runs(ctx, request.id);
  if (was_running) {
    TNK_RETURN_IF_ERROR(stop_by_id(ctx, request.id, "restore"));
  }
  {
    TNK_ASSIGN_OR_RETURN(FileLock lock, lock_sandbox(ctx, request.id));
    if (runs(ctx, request.id)) {
      return failed("sandbox " + request.id + " was started again while it was being restored",
                    "run the restore again");
    }
    Status restored = put_back(ctx, request.id, checkpoint_dir(ctx, request.id, request.name));
    if (!restored) return restored.error().context("restoring " + request.id + " to checkpoint " + request.name);
  }
  TNK_RETURN_IF_ERROR(write_audit(ctx, request, audit::sandbox_checkpoint(request.id, "restore", covered(c))));
  if (was_running) {
    state::Store store(ctx.paths.sandboxes_dir());
    TNK_RETURN_IF_ERROR(
        start_again(ctx, request.audit_log, review::layer_in_use(review::layer_in(store.dir(request.id))), "restore"));
  }
  return c;
}

nlohmann::json to_json(const Checkpoint& c) {
  return {{"name", c.name},
          {"created_at", c.created_at},
          {"was_running", c.was_running},
          {"bytes", c.bytes},
          {"entries", c.entries}};
}

}  // namespace tnk::backend
