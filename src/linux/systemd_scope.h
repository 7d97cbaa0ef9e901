// A cgroup v2 subtree of the supervisor's own on a host whose cgroups systemd manages (Debian 12 and 13,
// Ubuntu since 21.10, Fedora, Arch). Two rules of the kernel's shape it: a cgroup that holds a process
// cannot enable the memory controller for its children, and a process moves only between cgroups whose
// common ancestor it may write. An ordinary user writes no cgroup but those its systemd user manager
// delegates, and a login session's scope is root's. So the supervisor starts in a transient scope that
// systemd makes for it with Delegate=yes (`systemd-run --scope`: the user's manager for a user, the
// system's, in tnk.slice, for root), moves itself into a leaf of that scope (tnk-supervisor), and enables
// the controllers there, so that each sandbox's cgroup beside the leaf carries its limits.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "core/result.h"

namespace tnk::linux {

// The leaf of its scope the supervisor moves into; the sandbox's cgroups are its siblings.
inline constexpr const char* kSupervisorLeaf = "tnk-supervisor";

// What decides whether systemd can give a supervisor a delegated scope (read by read_systemd_facts).
struct SystemdFacts {
  bool booted = false;  // /run/systemd/system exists: PID 1 is systemd
  bool root = false;
  uid_t uid = 0;
  std::string user;                   // the effective user's name, for messages
  std::filesystem::path runtime_dir;  // a user's: /run/user/UID, where pam_systemd puts it
  bool manager_reachable = false;     // the manager's private socket exists (a user's: runtime_dir/systemd/private)
  // What a delegated scope gets: a user's, the controllers systemd delegates to user@UID.service (its
  // cgroup.subtree_control); root's, the controllers of the hierarchy's root.
  std::set<std::string> controllers;
};

// `v2_mount`: where the cgroup2 hierarchy is mounted (its root).
SystemdFacts read_systemd_facts(const std::filesystem::path& v2_mount);

// The command that runs `command` (an absolute path first) in a new transient scope with Delegate=yes,
// named `unit` (".scope" is added by systemd-run); `systemd_run` is its absolute path. Pure.
std::vector<std::string> scope_command(const SystemdFacts& facts, const std::string& systemd_run,
                                       const std::string& unit, const std::vector<std::string>& command);

// The environment systemd-run needs to find the manager: a user's XDG_RUNTIME_DIR. Pure.
std::vector<std::string> scope_environment(const SystemdFacts& facts);

// Why a supervisor cannot get a scope, and the fix, when the manager is not reachable: a user without a
// login session or lingering (`su` without a session, a cron job, a container). Pure.
struct ScopeGap {
  std::string why;
  std::string fix;
};
ScopeGap scope_gap(const SystemdFacts& facts);

// The supervisor, first thing, when it was started in a scope: moves this process into the scope's leaf
// kSupervisorLeaf and enables every controller the scope has for its children. Single-threaded callers
// only need not care: writing cgroup.procs moves every thread. The processes it forks later stay in the
// leaf unless they join a sandbox's cgroup.
Status settle_in_scope();

// Whether our own cgroup v2 directory is a settled supervisor's leaf: then its parent, the scope, holds
// the sandboxes' cgroups. Pure.
bool is_supervisor_leaf(const std::filesystem::path& own_v2_dir);

}  // namespace tnk::linux
