// Everything a vm sandbox's QEMU and virtiofsd are given, as one pure function of the supervisor's
// config, the few host facts that matter and the agent's token (golden-tested in plan_test.cc): the
// guest's size, the forwards its network policy allows, the files in the state directory, the guest
// agent's boot parameters. The vm engine only applies the plan: it makes the sockets and starts the
// processes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "backend/vm/qemu_argv.h"
#include "backend/vm/virtiofsd_argv.h"
#include "core/result.h"
#include "idmap/root_ranges.h"
#include "linux/resource_limits.h"
#include "supervisor/config.h"

namespace tnk::vm {

inline constexpr uint64_t kDefaultDiskBytes = 10ull << 30;             // the overlay, without `disk` in the manifest
inline constexpr uint64_t kDefaultMemoryMib = 1024;                    // without `memory`
inline constexpr uint64_t kMinimumMemoryMib = 128;                     // a smaller `memory` is raised to this
inline constexpr const char* kGuestAddress = "10.0.2.15";              // the guest's NIC (QEMU user network)
inline constexpr const char* kGuestIp = "10.0.2.15/24";                // tnk.ip= for the agent
inline constexpr const char* kVirtiofsdSource = "/run/tnk-workspace";  // where virtiofsd sees the project
inline constexpr const char* kGitVirtiofsdSource = "/run/tnk-gitdir";  // and the git dir's, a worktree's
// QEMU's end of the agent's connect bridge (agent/bridge.h), in QEMU's own network namespace: an
// unprivileged port, since a rootless QEMU has no capability to bind a low one, on 127.0.0.2, which
// the guest's own connections (to 127.0.0.1 there: qemu_argv.h) never reach.
inline constexpr const char* kBridgeHostAddress = "127.0.0.2";
inline constexpr uint16_t kBridgeHostPort = 10023;

// Security review M5: the sandbox's cgroup tnk-<id> holds its host processes (QEMU and virtiofsd) under
// this pids limit: far more than their threads (QEMU's I/O pool has at most 64 workers), far less than a
// host has. The guest's memory and CPUs are QEMU's -m and -smp.
inline constexpr uint64_t kHostPidsLimit = 1024;
// Those limits, as the command line checks them before a start and the supervisor applies them.
linux::Limits host_limits();

// Run by root, QEMU runs as this id of root's range (uid and gid alike; security review H1), so that
// neither a sandbox's usual processes nor the files its guest writes through virtiofsd are QEMU's (only
// guest root could choose the id).
inline constexpr uint32_t kQemuRangeId = idmap::kHelperRangeId;

// The host ids an unprivileged QEMU runs as.
struct QemuAccount {
  uid_t uid = 0;
  gid_t gid = 0;
};

// What the plan needs from the host, read by the engine just before it starts the guest.
struct VmHostFacts {
  uint64_t tsc_khz = 0;   // host_tsc_khz(); TCG only (0: unknown, not passed)
  uid_t project_uid = 0;  // the project directory's owner, who owns the guest agent's files
  gid_t project_gid = 0;
  // The subordinate ranges: run by root, root's, where QEMU's account is.
  std::optional<idmap::IdRange> uid_range, gid_range;
  // A linked worktree's common git dir (supervisor/protection.h), shared at its own path; empty: none.
  std::filesystem::path git_common_dir;
  // Run by root (the ranges are root's): QEMU runs as id kQemuRangeId of them, and opens no host path.
  // Rootless: QEMU runs as the user.
  bool run_by_root = false;
  // An overlay made by an older tnk (no state::kBootsFromBase): its base disk's agent cannot switch
  // roots, so the guest boots from the overlay, init and all, as it did then.
  bool init_on_overlay = false;
};

// A vm sandbox's files in its state directory (state/layout.h names them).
struct VmFiles {
  std::filesystem::path disk, base_disk_link;  // the qcow2 overlay and its link to the base image
  std::filesystem::path boots_from_base;       // state::kBootsFromBase
  std::filesystem::path qmp_socket, qmp_events_socket, agent_socket, virtiofsd_socket, serial_socket,
      git_virtiofsd_socket;
  std::filesystem::path serial_log, qemu_log, virtiofsd_log, git_virtiofsd_log;
};
VmFiles vm_files(const std::filesystem::path& state_dir);

struct VmPlan {
  VmFiles files;
  uint64_t disk_bytes = kDefaultDiskBytes;  // the overlay's size when it is first made
  QemuConfig qemu;
  std::vector<std::string> qemu_argv;
  std::filesystem::path project_dir;  // the host directory virtiofsd shares (bound onto its source)
  VirtiofsdConfig virtiofsd;
  VirtiofsdPlan virtiofsd_plan;  // argv and user namespace, with the socket inherited as fd 3
  // The git dir's virtiofsd, as the project's (the same owner and maps): set with facts.git_common_dir.
  std::optional<VirtiofsdConfig> git_virtiofsd;
  VirtiofsdPlan git_virtiofsd_plan;
  // Run by root: QEMU's account, and qemu.handed_files is set; empty: QEMU runs as the caller.
  std::optional<QemuAccount> qemu_account;
};

// The whole plan, or why QEMU or virtiofsd could not be given it (no kernel or base disk in the config,
// a value their command lines cannot carry). `config.vm_kvm` chooses KVM or TCG.
Result<VmPlan> vm_plan(const supervisor::SupervisorConfig& config, const VmHostFacts& facts, const std::string& token);

}  // namespace tnk::vm
