#include "backend/list.h"

#include <algorithm>
#include <map>
#include <memory>

#include "backend/registry.h"
#include "output/output.h"
#include "state/store.h"

namespace tnk::backend {

Result<std::vector<SandboxRow>> list_sandboxes(Context& ctx) {
  state::Store store(ctx.paths.sandboxes_dir());
  TNK_ASSIGN_OR_RETURN(std::vector<std::string> ids, store.list_ids());
  std::vector<SandboxRow> rows;
  // One backend of each kind: lima's answers every sandbox from one `limactl list`.
  std::map<BackendKind, Result<std::unique_ptr<sandbox::Backend>>> backends;
  for (const auto& id : ids) {
    auto record = store.load(id);
    if (!record) {  // listed as broken so that `delete` can be found; the warning says why
      ctx.log.warn(record.error().message);
      rows.push_back({id, state::to_string(state::SandboxState::kBroken), "", "", "", "", ""});
      continue;
    }
    if (!*record) continue;  // a directory without a record: a create that never finished
    const auto& rec = **record;
    auto it = backends.find(rec.backend);
    if (it == backends.end()) it = backends.emplace(rec.backend, open_backend(ctx, rec.backend)).first;
    // A backend this build lacks: the registry's own message says so.
    sandbox::Observed seen{state::SandboxState::kAbsent,
                           it->second ? std::nullopt : std::optional(it->second.error().message)};
    if (it->second) seen = (*it->second)->observe(ctx.paths, id);
    // "unknown": the backend cannot tell here (limactl missing or failing); the warning says why.
    if (seen.problem) ctx.log.warn(*seen.problem);
    std::string status = seen.problem ? "unknown" : state::to_string(seen.state);
    rows.push_back(
        {id, status, to_string(rec.backend), rec.profile, rec.mount_point, rec.project_dir.string(), rec.parent});
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
                     {"project", r.project},
                     {"parent", r.parent.empty() ? nlohmann::json() : nlohmann::json(r.parent)}});
  }
  return items;
}

// A PARENT column when there are forks.
std::string render_table(const std::vector<SandboxRow>& rows) {
  bool forks = std::any_of(rows.begin(), rows.end(), [](const SandboxRow& r) { return !r.parent.empty(); });
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows) {
    cells.push_back({r.name, r.status, r.backend, r.profile, r.mount, r.project});
    if (forks) cells.back().push_back(r.parent.empty() ? "-" : r.parent);
  }
  std::vector<std::string> heads = {"NAME", "STATUS", "BACKEND", "PROFILE", "MOUNT", "PROJECT"};
  if (forks) heads.push_back("PARENT");
  return tnk::render_table(heads, cells);
}

}  // namespace tnk::backend
