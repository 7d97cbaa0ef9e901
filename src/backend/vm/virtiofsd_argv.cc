#include "backend/vm/virtiofsd_argv.h"

namespace tnk::vm {
namespace {

// Guest ids 0..count-1 on host base.., except the agent's id, which is the owner's.
Result<idmap::IdMap> id_map(uint32_t owner, uint32_t base, const VirtiofsdConfig& c, const char* what) {
  if (c.guest_agent_id == 0 || c.guest_agent_id >= c.id_count) {
    return usage_error("the guest agent id " + std::to_string(c.guest_agent_id) + " is outside the guest's range");
  }
  if (owner >= base && owner < uint64_t{base} + c.id_count) {
    return usage_error(std::string("the project's owner ") + what + " " + std::to_string(owner) +
                           " lies in the range tnk gives guest ids (" + std::to_string(base) + "+)",
                       "give the project to another user");
  }
  return idmap::sandbox_map({base, c.id_count}, owner, c.guest_agent_id);
}

}  // namespace

Result<VirtiofsdPlan> virtiofsd_plan(const VirtiofsdConfig& c) {
  if (!c.socket.is_absolute() || !c.source.is_absolute()) {
    return usage_error("virtiofsd needs absolute paths (socket " + c.socket.string() + ", source " + c.source.string() +
                       ")");
  }
  if (c.cache != "auto" && c.cache != "always" && c.cache != "none") {
    return usage_error("unknown virtiofs cache mode '" + c.cache + "'", "use auto, always or none");
  }
  // virtiofsd's -o values are split on commas; a path with one cannot be passed.
  for (const auto& p : {c.socket.string(), c.source.string()}) {
    if (p.find(',') != std::string::npos) return usage_error("virtiofsd cannot take a path with a comma: " + p);
  }
  VirtiofsdPlan plan;
  plan.argv = {c.program,
               c.listen_fd >= 0 ? "--fd=" + std::to_string(c.listen_fd) : "--socket-path=" + c.socket.string(),
               "-o",
               "source=" + c.source.string(),
               "-o",
               "cache=" + c.cache,
               "-o",
               "sandbox=namespace",
               "--rlimit-nofile=0"};
  TNK_ASSIGN_OR_RETURN(plan.uid_map, id_map(c.owner_uid, c.host_uid_base, c, "uid"));
  TNK_ASSIGN_OR_RETURN(plan.gid_map, id_map(c.owner_gid, c.host_gid_base, c, "gid"));
  return plan;
}

}  // namespace tnk::vm
