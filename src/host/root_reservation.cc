#include "host/root_reservation.h"

#include <chrono>

#include "core/file_lock.h"
#include "core/files.h"
#include "host/setup_command.h"
#include "idmap/root_ranges.h"
#include "idmap/subordinate_ids.h"

namespace tnk::host {

Result<std::optional<SetupStep>> root_reservation_step(const std::string& subuid, const std::string& subgid) {
  if (idmap::root_ranges_in(subuid, subgid).reserved) return std::optional<SetupStep>();
  SetupFacts facts;
  facts.user = "root";
  facts.subuid = subuid;
  facts.subgid = subgid;
  TNK_ASSIGN_OR_RETURN(std::vector<SetupStep> steps, plan_root_setup(facts));
  for (auto& step : steps) {
    if (step.id == "subids" && !step.ops.empty()) return std::optional<SetupStep>(std::move(step));
  }
  return std::optional<SetupStep>();
}

Result<std::string> reserve_root_ranges() {
  TNK_ASSIGN_OR_RETURN(FileLock lock, FileLock::acquire(kRootRangesLock, std::chrono::seconds(30), {},
                                                        "another tnk is reserving root's subordinate ids: retry"));
  // Read under the lock: a tnk that reserved them meanwhile leaves nothing to do.
  auto text = [](const char* file) {
    auto content = read_file(file);
    return content.ok() ? *content : std::string();
  };
  TNK_ASSIGN_OR_RETURN(std::optional<SetupStep> step,
                       root_reservation_step(text(idmap::kSubuidFile), text(idmap::kSubgidFile)));
  if (!step) return std::string();
  for (const SetupOp& op : step->ops) {
    Status ran = op.kind == SetupOp::Kind::kRun ? run_setup_command(op.argv) : failed("not a command: " + op_text(op));
    if (!ran.ok()) {
      return ran.error()
          .context("reserving subordinate ids for root's sandboxes")
          .with_hint("sudo tnk setup --user root, or give root a range by hand (usermod --add-subuids)");
    }
  }
  return "root had no subordinate ids of its own: " + step->done +
         " (as `tnk setup --user root` does), so that its sandboxes share no ids with a user's";
}

}  // namespace tnk::host
