#include "backend/vm/virtiofsd_argv.h"

namespace tnk::vm {

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
  // virtiofsd runs as the agent's id, which must not be the namespace's root: see virtiofsd_argv.h.
  if (c.guest_agent_id == 0) return usage_error("the guest agent id cannot be root's (0)");
  // It would act as host root, with every capability over host root's files in the project.
  if (c.owner_uid == 0) {
    return usage_error("virtiofsd does not serve a project that host root owns", "give the project to another user");
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
  // Only the agent's ids, as the owner's. Every other guest id is unmapped: a request that carries one
  // fails where virtiofsd takes it on (setresuid, setresgid: EINVAL), and a chown to one fails the same way.
  plan.uid_map = {{c.guest_agent_id, c.owner_uid, 1}};
  plan.gid_map = {{c.guest_agent_id, c.owner_gid, 1}};
  plan.run_as = c.guest_agent_id;
  return plan;
}

}  // namespace tnk::vm
