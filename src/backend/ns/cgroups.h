// The sandbox's cgroups, chosen per controller: a delegated cgroup v2 controller in our own cgroup, else
// (as root) our own cgroup in the v1 hierarchy of that controller, else (an ordinary user) the v1
// directory tnk-user-<user> that `tnk setup` gave the user, else a note. Directories are named
// tnk-<name> and nest under the caller's own cgroups or the user's directory, never at a hierarchy's root.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "backend/ns/sandbox.h"
#include "core/result.h"

namespace tnk::ns {

struct CgroupMembership {  // one line of /proc/PID/cgroup
  int hierarchy = 0;
  std::vector<std::string> controllers;  // empty for v2 ("0::/path"); may hold "name=systemd"
  std::string path;
};

struct CgroupMount {  // a cgroup or cgroup2 line of /proc/PID/mountinfo
  bool v2 = false;
  std::vector<std::string> controllers;  // v1: from the super options
  std::string root;
  std::filesystem::path mount_point;
};

std::vector<CgroupMembership> parse_proc_cgroup(std::string_view text);
std::vector<CgroupMount> parse_cgroup_mounts(std::string_view mountinfo);

// The directory of a membership on this host (mount point + path below the mount's root), if mounted.
std::optional<std::filesystem::path> cgroup_dir(const CgroupMembership& membership,
                                                const std::vector<CgroupMount>& mounts);

// What this process may use for a sandbox's cgroups.
struct CgroupHost {
  std::optional<std::filesystem::path> v2_dir;  // our own cgroup v2 directory
  std::set<std::string> v2_delegated;           // controllers in its cgroup.subtree_control (not root: when it is ours)
  std::map<std::string, std::filesystem::path> v1;       // v1 controller -> our own directory in that hierarchy
  bool root = false;                                     // effective uid 0 (v1 is only written as root)
  std::string user;                                      // not root: the effective user's name
  std::map<std::string, std::filesystem::path> v1_user;  // not root: controller -> tnk-user-<user>, when ours
};

Result<CgroupHost> detect_cgroup_host();

struct CgroupDirPlan {
  std::filesystem::path dir;
  std::vector<std::string> controllers;                    // the limits this directory carries
  std::vector<std::pair<std::string, std::string>> files;  // file name, value; written in order
};

struct CgroupPlan {
  std::vector<CgroupDirPlan> dirs;
  std::vector<std::string> unapplied;  // controllers with a limit but nowhere to apply it
  std::string unapplied_fix;           // what gives them a place
};

// Pure: which directories and files carry `limits` (pids always; memory and cpu when set).
// An ordinary user's v2 limits go below its own cgroup only when that is delegated to it (systemd's
// Delegate=yes): a v2 process may only move between cgroups whose common ancestor it may write.
CgroupPlan plan_cgroups(const CgroupHost& host, const std::string& name, const Limits& limits);

// Creates the directories and writes the limits. A directory the kernel refuses to create (EACCES, EPERM,
// EROFS) becomes a note; a limit it refuses to take is an error (and what was created is removed).
Result<std::vector<std::string>> apply_cgroups(const CgroupPlan& plan);

// rmdir, retrying briefly while the kernel still counts exited processes; missing directories are fine.
Status remove_cgroup_dirs(const std::vector<std::filesystem::path>& dirs);

// Every tnk-<name> directory this process's hierarchies could hold for `name`.
Result<std::vector<std::filesystem::path>> cgroup_dirs_for_name(const std::string& name);

// The cgroup directories of `pid` that differ from the caller's own (the sandbox's cgroups).
Result<std::vector<std::filesystem::path>> process_cgroup_dirs(pid_t pid);

}  // namespace tnk::ns
