// Every file tnk keeps for a sandbox, by name. Documented in docs/state-layout.md; no other
// module spells these names.
#pragma once

namespace tnk::state {

// $XDG_STATE_HOME/tnk/sandboxes/<id>/...
inline constexpr const char* kRecordFile = "sandbox.json";  // the record (atomic rewrite)
inline constexpr const char* kLockFile = "lock";            // flock, held only while state changes
inline constexpr const char* kSupervisorPidFile = "supervisor.pid";
// flock held by the sandbox's supervisor from its first step to its exit: never two supervisors at once
inline constexpr const char* kSupervisorLock = "supervisor.lock";
inline constexpr const char* kControlSocket = "ctl.sock";        // supervisor control socket, 0600
inline constexpr const char* kSupervisorLog = "supervisor.log";  // its stdout and stderr, capped and rotated
// Why the sandbox ended without a stop (QEMU or virtiofsd died, ...): it is broken until the next start.
inline constexpr const char* kFailureFile = "failure.txt";
inline constexpr const char* kDiskFile = "disk.qcow2";  // vm: overlay of the shared base image
// vm: a hard link to (or copy of) the base disk the overlay was made on: its backing file, which image
// rm/rebuild in the cache can then never change.
inline constexpr const char* kBaseDiskLink = "base.img";
// vm: made with the overlay by a tnk whose guest boots from the read-only base disk (security review 3,
// R3-H2). An overlay without it was made by an older tnk, on a base whose agent cannot: that sandbox
// still boots its init from the overlay.
inline constexpr const char* kBootsFromBase = "boots-from-base";
inline constexpr const char* kQmpSocket = "qmp.sock";
// vm: a second QMP monitor, where the supervisor reads QEMU's events (a disk whose host file system is full)
inline constexpr const char* kQmpEventsSocket = "qmpev.sock";
inline constexpr const char* kVirtiofsdSocket = "virtiofsd.sock";
inline constexpr const char* kAgentSocket = "agent.sock";
// vm: the guest's console, capped and rotated (serial.log.1 the part before; core/capped_log.h)
inline constexpr const char* kSerialLog = "serial.log";
inline constexpr const char* kSerialSocket = "serial.sock";    // vm: QEMU connects its console here
inline constexpr const char* kQemuLog = "qemu.log";            // vm: QEMU's stdout and stderr, rewritten at start
inline constexpr const char* kVirtiofsdLog = "virtiofsd.log";  // vm: virtiofsd's stdout and stderr
// vm, a linked worktree: the virtiofsd of its common git dir (docs/workspace.md), its socket and output
inline constexpr const char* kGitVirtiofsdSocket = "gitfs.sock";  // shorter than naming's kLongestSocketName
inline constexpr const char* kGitVirtiofsdLog = "gitfs.log";
inline constexpr const char* kUpperDir = "upper";       // ns: persistent overlay upper layer
inline constexpr const char* kOverlayWorkDir = "work";  // ns: overlayfs work dir
// ns, a sandbox with a disk of its own (state/own_disk.h): the disk's mount point, and the layers on it
// in place of upper, work, review/upper and review/work.
inline constexpr const char* kOwnDiskDir = "disk";
inline constexpr const char* kOwnDiskUpperDir = "disk/upper";
inline constexpr const char* kOwnDiskWorkDir = "disk/work";
inline constexpr const char* kOwnDiskReviewUpperDir = "disk/review-upper";
inline constexpr const char* kOwnDiskReviewWorkDir = "disk/review-work";
inline constexpr const char* kOwnDiskBoundFile = "disk/bound";   // the resources.disk it was last mounted for
inline constexpr const char* kStagingDir = "mnt";                // ns: where the root is assembled before pivot_root
inline constexpr const char* kRuntimeDir = "run";                // ns: generated /etc/hosts, resolv.conf, hostname
inline constexpr const char* kProvisionLock = "provision.lock";  // flock held while provisioning runs
// The protected paths and what became of each at start (state/protection.h), rewritten when one appears.
inline constexpr const char* kProtectionFile = "protection.json";
// The host user's network rules (`tnk sandbox allow`, `deny`; net/live_policy.h), applied at every
// start until they expire or are replaced; rewritten atomically under the lock.
inline constexpr const char* kNetworkRulesFile = "network_rules.json";
// What the host's git would run from the project at start, and what tnk held since (state/git_guard.h).
inline constexpr const char* kGitGuardFile = "git_guard.json";
// Review mode (docs/workspace.md): the layer the sandbox's writes to the project land in, and the
// project's stamps when the layer was made (review/baseline.h). Present: the sandbox is in review mode.
inline constexpr const char* kReviewDir = "review";
inline constexpr const char* kReviewUpperDir = "review/upper";         // overlayfs upper over the project
inline constexpr const char* kReviewWorkDir = "review/work";           // its work directory
inline constexpr const char* kReviewBaselineFile = "review/baseline";  // NUL-separated stamps

// Checkpoints (docs/checkpoints.md): checkpoints/<name>/ holds a copy of the sandbox's own state
// (backend/own_state.h) under the same names as above, and checkpoint.json says what and when.
inline constexpr const char* kCheckpointsDir = "checkpoints";
inline constexpr const char* kCheckpointFile = "checkpoint.json";

// The top-level directories (config, state/sandboxes, state/audit, cache/images) are spelled once,
// in core/paths.h. $XDG_CACHE_HOME/tnk/...
inline constexpr const char* kModelCacheFile = "inference.json";  // the last /v1/models answer, 30 s

// The current schema of sandbox.json; records from a newer tnk are refused. (There is no older
// schema yet; when there is, it is migrated on read.)
inline constexpr int kRecordSchema = 1;

}  // namespace tnk::state
