#include "backend/vm/plan.h"

#include <algorithm>
#include <cmath>

#include "agent/bridge.h"
#include "state/layout.h"

namespace tnk::vm {
namespace {

QemuConfig qemu_config(const supervisor::SupervisorConfig& config, const VmHostFacts& facts, const VmFiles& files,
                       const std::string& token) {
  QemuConfig q;
  q.kvm = config.vm_kvm;
  if (!q.kvm) q.tsc_khz = facts.tsc_khz;
  // A fractional `cpus` (the ns backend's CPU quota) becomes whole vCPUs, rounded up.
  q.cpus = config.cpus ? std::max(1, static_cast<int>(std::ceil(*config.cpus))) : 1;
  q.memory_mib =
      config.memory_bytes ? std::max<uint64_t>(*config.memory_bytes >> 20, kMinimumMemoryMib) : kDefaultMemoryMib;
  q.kernel = config.vm_kernel;
  q.root_disk = files.disk;
  if (!facts.init_on_overlay) q.boot_disk = files.base_disk_link;
  q.qmp_socket = files.qmp_socket;
  q.qmp_events_socket = files.qmp_events_socket;
  q.agent_socket = files.agent_socket;
  q.virtiofs_socket = files.virtiofsd_socket;
  q.serial_socket = files.serial_socket;
  q.agent.token = token;
  q.agent.mount = config.mount_point;
  if (!facts.git_common_dir.empty()) {
    q.git_dir_socket = files.git_virtiofsd_socket;
    q.agent.git_dir = facts.git_common_dir.string();
  }
  q.agent.hostname = config.id;
  q.agent.ip = kGuestIp;
  // A NIC under every policy (under `none` no relay listens for it), for the bridge that port forwards use.
  q.network = true;
  q.handed_files = facts.run_by_root;
  q.host_forwards = {{kBridgeHostAddress, kBridgeHostPort, kGuestAddress, agent::kBridgePort}};
  q.name = "tnk-" + config.id;
  return q;
}

}  // namespace

linux::Limits host_limits() {
  linux::Limits limits;
  limits.pids = kHostPidsLimit;
  return limits;
}

VmFiles vm_files(const std::filesystem::path& state_dir) {
  VmFiles f;
  f.disk = state_dir / state::kDiskFile;
  f.base_disk_link = state_dir / state::kBaseDiskLink;
  f.boots_from_base = state_dir / state::kBootsFromBase;
  f.qmp_socket = state_dir / state::kQmpSocket;
  f.qmp_events_socket = state_dir / state::kQmpEventsSocket;
  f.agent_socket = state_dir / state::kAgentSocket;
  f.virtiofsd_socket = state_dir / state::kVirtiofsdSocket;
  f.serial_socket = state_dir / state::kSerialSocket;
  f.serial_log = state_dir / state::kSerialLog;
  f.qemu_log = state_dir / state::kQemuLog;
  f.virtiofsd_log = state_dir / state::kVirtiofsdLog;
  f.git_virtiofsd_socket = state_dir / state::kGitVirtiofsdSocket;
  f.git_virtiofsd_log = state_dir / state::kGitVirtiofsdLog;
  return f;
}

Result<VmPlan> vm_plan(const supervisor::SupervisorConfig& config, const VmHostFacts& facts, const std::string& token) {
  if (config.vm_kernel.empty() || config.vm_base_disk.empty()) {
    return failed("the vm sandbox " + config.id + " has no kernel or base disk in its configuration");
  }
  VmPlan plan;
  plan.files = vm_files(config.state_dir);
  plan.disk_bytes = config.disk_bytes.value_or(kDefaultDiskBytes);
  plan.qemu = qemu_config(config, facts, plan.files, token);
  TNK_ASSIGN_OR_RETURN(plan.qemu_argv, qemu_argv(plan.qemu));
  if (facts.run_by_root) {
    if (!facts.uid_range || !facts.gid_range) return failed("a vm sandbox root runs needs root's id ranges");
    plan.qemu_account = QemuAccount{facts.uid_range->start + kQemuRangeId, facts.gid_range->start + kQemuRangeId};
  }
  plan.project_dir = config.project_dir;
  plan.virtiofsd.socket = plan.files.virtiofsd_socket;
  plan.virtiofsd.listen_fd = 3;
  plan.virtiofsd.source = kVirtiofsdSource;
  plan.virtiofsd.owner_uid = facts.project_uid;
  plan.virtiofsd.owner_gid = facts.project_gid;
  TNK_ASSIGN_OR_RETURN(plan.virtiofsd_plan, virtiofsd_plan(plan.virtiofsd));
  if (!facts.git_common_dir.empty()) {
    plan.git_virtiofsd = plan.virtiofsd;
    plan.git_virtiofsd->socket = plan.files.git_virtiofsd_socket;
    plan.git_virtiofsd->source = kGitVirtiofsdSource;
    TNK_ASSIGN_OR_RETURN(plan.git_virtiofsd_plan, virtiofsd_plan(*plan.git_virtiofsd));
  }
  return plan;
}

}  // namespace tnk::vm
