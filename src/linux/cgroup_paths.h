// Where this process's cgroups are: /proc/PID/cgroup and the cgroup mounts of /proc/PID/mountinfo parsed
// as pure functions of their text, and the directory each membership names on this host.
#pragma once

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tnk::linux {

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

// This process's own cgroup v2 directory, when the unified hierarchy is mounted.
Result<std::optional<std::filesystem::path>> own_cgroup_v2_dir();

// The cgroup2 mount whose root is the hierarchy's root, if any.
std::optional<std::filesystem::path> cgroup_v2_mount(const std::vector<CgroupMount>& mounts);

// The words of a cgroup file such as cgroup.controllers or cgroup.subtree_control; none when unreadable.
std::set<std::string> cgroup_words(const std::filesystem::path& file);

}  // namespace tnk::linux
