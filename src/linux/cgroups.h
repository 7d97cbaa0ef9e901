// The sandbox's cgroups, chosen per controller: a delegated cgroup v2 controller in our own cgroup (the
// supervisor's systemd scope, linux/systemd_scope.h, on a host whose cgroups systemd manages), else (as
// root) our own cgroup in the v1 hierarchy of that controller, else (an ordinary user) the v1 directory
// tnk-user-<user> that `tnk setup` gave the user, else a note. Directories are named by sandbox_cgroup_name and nest
// under the caller's own cgroups, its scope or the user's directory, never at a hierarchy's root.
// A start without its pids or memory limit is refused unless the user opted in (security review M5).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"
#include "linux/cgroup_paths.h"
#include "linux/resource_limits.h"
#include "linux/systemd_scope.h"

namespace tnk::linux {

// The directory name of a sandbox's cgroups: its id, which begins with "tnk-" (naming.h), or "tnk-" + a
// name that does not (tests, probes).
std::string sandbox_cgroup_name(const std::string& name);

// What this process may use for a sandbox's cgroups.
struct CgroupHost {
  std::optional<std::filesystem::path> v2_dir;  // our own cgroup v2 directory (a settled supervisor: its scope)
  std::set<std::string> v2_delegated;           // controllers in its cgroup.subtree_control (not root: when it is ours)
  std::map<std::string, std::filesystem::path> v1;       // v1 controller -> our own directory in that hierarchy
  bool root = false;                                     // effective uid 0 (v1 is only written as root)
  std::string user;                                      // not root: the effective user's name
  std::map<std::string, std::filesystem::path> v1_user;  // not root: controller -> tnk-user-<user>, when ours
  // Set on a host whose cgroups systemd manages, with no v1 hierarchy, in a process that is not a settled
  // supervisor: the supervisor will run in a delegated scope of its own, which these facts foresee.
  std::optional<SystemdFacts> systemd;
};

Result<CgroupHost> detect_cgroup_host();

struct CgroupDirPlan {
  std::filesystem::path dir;
  std::vector<std::string> controllers;                    // the limits this directory carries
  std::vector<std::pair<std::string, std::string>> files;  // file name, value; written in order
};

// Limits a sandbox would go without, for one reason.
struct UnappliedLimits {
  std::vector<std::string> controllers;  // "pids", "memory", "cpu"
  std::string why;                       // "no cgroup subtree is delegated to alice", "cannot create cgroup ..."
  std::string fix;                       // what gives them a place; may be empty
};

struct CgroupPlan {
  std::vector<CgroupDirPlan> dirs;         // below kScopeStandIn when in_supervisor_scope
  bool in_supervisor_scope = false;        // foreseen in the scope the supervisor will get: not to apply here
  std::vector<UnappliedLimits> unapplied;  // the controllers with a limit but nowhere to apply it (one entry)
};

// What stands for the supervisor's scope in a plan made before it exists (the command line's check).
inline constexpr const char* kScopeStandIn = "/sys/fs/cgroup/(the supervisor's systemd scope)";

// Whether a supervisor started now should run in a delegated systemd scope (launch_supervisor), with
// the facts that say how: a host whose cgroups systemd manages, a manager that answers.
std::optional<SystemdFacts> supervisor_scope(const CgroupHost& host);

// Pure: which directories and files carry `limits` (pids always; memory and cpu when set).
// An ordinary user's v2 limits go below its own cgroup only when that is delegated to it (systemd's
// Delegate=yes): a v2 process may only move between cgroups whose common ancestor it may write.
CgroupPlan plan_cgroups(const CgroupHost& host, const std::string& name, const Limits& limits);

// What gives the limits a place on this host: `tnk setup` for a user of a cgroup v1 host. On a cgroup v2
// host nothing does yet: the kernel lets no cgroup that holds a process (tnk's own, or a delegated
// unit's) both enable the memory controller for its children and take new processes, and a tnk-owned
// subtree there, or a systemd scope with Delegate=yes for the supervisor, is not built (this project's
// hosts have no cgroup v2 controllers to test it on).
std::string cgroup_fix(const CgroupHost& host);

// What a start would go without besides the plan's own gaps, foreseen without creating anything: each
// planned directory whose parent this process may not write (access(2): a read-only cgroup mount, a
// directory of another user).
std::vector<UnappliedLimits> foresee_unapplied(const CgroupPlan& plan);

// Creates the directories and writes the limits; returns what goes without: the plan's gaps, and each
// directory the kernel refuses to create (EACCES, EPERM, EROFS). A limit the kernel refuses to take is an
// error (and what was created is removed).
Result<std::vector<UnappliedLimits>> apply_cgroups(const CgroupPlan& plan);

// The note a start prints for limits it goes without: "pids/memory limits not applied: <why> (<fix>)".
std::string unapplied_note(const UnappliedLimits& unapplied);

// Security review M5: a sandbox without a pids limit, or without the memory limit it has, lets a fork
// bomb or a memory hog inside reach the host. Refuses (exit 77) when one of them is in `unapplied`,
// naming it, why, the fix and the opt-in; with `allow_unlimited` (tnk.toml allow_unlimited) the start
// goes on without them, and its notes say so. A cpu limit alone is never a reason to refuse.
Status require_limits(const std::vector<UnappliedLimits>& unapplied, bool allow_unlimited);

// Before anything of a start is made (run by the command line, in the cgroups its supervisor will
// inherit): require_limits over the plan for this host and what foresee_unapplied finds.
Status check_limits_before_start(const std::string& name, const Limits& limits, bool allow_unlimited);

// A start's cgroups, made: apply_cgroups over this host's plan, then require_limits (what it created is
// removed when it refuses). `procs` holds an O_WRONLY descriptor of each created directory's cgroup.procs:
// the sandbox's first processes join through them (join_cgroups) before they change ids or namespaces,
// so that the kernel checks the write against the creator's own credentials.
struct MadeCgroups {
  std::vector<std::filesystem::path> dirs;
  std::vector<UniqueFd> procs;
  std::vector<std::string> notes;  // unapplied_note of each limit the start goes without
};
Result<MadeCgroups> make_sandbox_cgroups(const std::string& name, const Limits& limits, bool allow_unlimited);

// After fork (system calls only): the calling process joins each cgroup by writing "0" (the writer) to
// its cgroup.procs descriptor. 0, or the errno of the first write that failed.
int join_cgroups(const std::vector<int>& procs_fds);

// rmdir, retrying briefly while the kernel still counts exited processes; missing directories are fine.
Status remove_cgroup_dirs(const std::vector<std::filesystem::path>& dirs);

// Every sandbox_cgroup_name(name) directory this process's hierarchies could hold for `name`.
Result<std::vector<std::filesystem::path>> cgroup_dirs_for_name(const std::string& name);

// How many processes the kernel's OOM killer has killed in these cgroups so far: the "oom_kill" line of
// memory.events (v2, counting the cgroups below) or of memory.oom_control (v1); 0 where neither is.
uint64_t oom_kills(const std::vector<std::filesystem::path>& dirs);

// The cgroup directories of `pid` that differ from the caller's own (the sandbox's cgroups).
Result<std::vector<std::filesystem::path>> process_cgroup_dirs(pid_t pid);

}  // namespace tnk::linux
