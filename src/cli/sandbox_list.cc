#include "cli/sandbox_list.h"

#include "output/output.h"
#include "sandbox/lima_lifecycle.h"
#include "state/liveness.h"
#include "state/store.h"

namespace tnk::cli {

Result<std::vector<SandboxRow>> list_sandboxes(Context& ctx) {
  state::Store store(ctx.paths.sandboxes_dir());
  TNK_ASSIGN_OR_RETURN(std::vector<std::string> ids, store.list_ids());
  std::vector<SandboxRow> rows;
  std::optional<sandbox::LimaStates> lima;  // one `limactl list` for every lima sandbox, when there is one
  for (const auto& id : ids) {
    auto record = store.load(id);
    if (!record) {  // listed as broken so that `delete` can be found; the warning says why
      ctx.log.warn(record.error().message);
      rows.push_back({id, state::to_string(state::SandboxState::kBroken), "", "", "", ""});
      continue;
    }
    if (!*record) continue;  // a directory without a record: a create that never finished
    const auto& rec = **record;
    std::string status;
    if (rec.backend == sandbox::kLimaBackend) {
      if (!lima) lima = sandbox::lima_states();
      // "unknown": limactl cannot be asked here (not installed, or failing); the warning says why.
      if (lima->problem) ctx.log.warn(*lima->problem);
      status = lima->problem ? "unknown" : state::to_string(lima->state_of(id));
    } else {
      status = state::to_string(state::observe(store, id));
    }
    rows.push_back({id, status, rec.backend, rec.profile, rec.mount_point, rec.project_dir.string()});
  }
  return rows;
}

nlohmann::json to_json(const std::vector<SandboxRow>& rows) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& r : rows) {
    items.push_back({{"name", r.name},
                     {"status", r.status},
                     {"backend", r.backend},
                     {"profile", r.profile},
                     {"mount", r.mount},
                     {"project", r.project}});
  }
  return items;
}

std::string render_table(const std::vector<SandboxRow>& rows) {
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows) cells.push_back({r.name, r.status, r.backend, r.profile, r.mount, r.project});
  return tnk::render_table({"NAME", "STATUS", "BACKEND", "PROFILE", "MOUNT", "PROJECT"}, cells);
}

}  // namespace tnk::cli
