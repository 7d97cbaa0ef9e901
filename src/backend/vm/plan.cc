#include "backend/vm/plan.h"

#include <algorithm>
#include <cmath>

#include "agent/bridge.h"
#include "net/policy.h"
#include "state/layout.h"
#include "supervisor/relays.h"

namespace tnk::vm {
namespace {

// The guest ports whose connections reach the supervisor's relays (supervisor/network.cc starts the
// same ones): under every policy but `none`, the inference endpoint (when there is one), the proxy
// that runs while provisioning does and the route gateway (when there are routes); under allowlist and
// open, the egress proxy too.
std::vector<uint16_t> relay_ports(const supervisor::SupervisorConfig& config) {
  if (config.network == NetworkPolicy::kNone) return {};
  std::vector<uint16_t> ports;
  if (config.inference_port != 0) ports.push_back(config.inference_port);
  if (has_egress_proxy(config.network)) ports.push_back(supervisor::kProxyPort);
  ports.push_back(supervisor::kProvisionProxyPort);
  if (!config.routes.empty()) ports.push_back(supervisor::kRoutesPort);
  return ports;
}

// Each connection to 10.0.2.100:<port> in the guest: a socat QEMU starts into the relay's socket. QEMU
// gives it the guest's connection as stdin, stdout and stderr, so its messages go to /dev/null: on
// stderr, an error ("write(5, ...): Broken pipe" when the relay has closed) would reach the guest as
// bytes of its connection, with the host's pids and socket paths in it.
// Run by root (`abstract`), the relay's socket is an abstract one in QEMU's network namespace.
std::vector<GuestForward> guest_forwards(const supervisor::SupervisorConfig& config, bool abstract) {
  std::vector<GuestForward> forwards;
  for (uint16_t port : relay_ports(config)) {
    GuestForward f;
    f.guest_port = port;
    f.command = {"socat", "-lf", "/dev/null", "STDIO",
                 abstract ? "ABSTRACT-CONNECT:" + forward_abstract_name(port)
                          : "UNIX-CONNECT:" + forward_socket(config.state_dir, port).string()};
    forwards.push_back(std::move(f));
  }
  return forwards;
}

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
  // A NIC under every policy (under `none` without forwarders), for the bridge that port forwards use.
  q.network = true;
  q.handed_files = facts.run_by_root;
  q.forwards = guest_forwards(config, q.handed_files);
  q.host_forwards = {{kBridgeHostPort, kGuestAddress, agent::kBridgePort}};
  q.name = "tnk-" + config.id;
  return q;
}

}  // namespace

VmFiles vm_files(const std::filesystem::path& state_dir) {
  VmFiles f;
  f.disk = state_dir / state::kDiskFile;
  f.base_disk_link = state_dir / state::kBaseDiskLink;
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

std::filesystem::path forward_socket(const std::filesystem::path& state_dir, uint16_t port) {
  return state_dir / (state::kForwardSocketPrefix + std::to_string(port) + ".sock");
}

std::string forward_abstract_name(uint16_t port) { return "tnk-fwd-" + std::to_string(port); }

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
  plan.virtiofsd.socket = plan.files.virtiofsd_socket;
  plan.virtiofsd.listen_fd = 3;
  plan.virtiofsd.source = kVirtiofsdSource;
  plan.virtiofsd.owner_uid = facts.project_uid;
  plan.virtiofsd.owner_gid = facts.project_gid;
  if (facts.uid_range) plan.virtiofsd.host_uid_base = facts.uid_range->start;
  if (facts.gid_range) plan.virtiofsd.host_gid_base = facts.gid_range->start;
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
