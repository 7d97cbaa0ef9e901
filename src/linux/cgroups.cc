#include "linux/cgroups.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/files.h"
#include "core/strings.h"
#include "core/unique_fd.h"
#include "core/user_name.h"
#include "idmap/subordinate_ids.h"
#include "naming/naming.h"

namespace tnk::linux {

namespace fs = std::filesystem;

namespace {

std::string cpu_quota(double cpus) {
  auto quota = static_cast<long long>(std::llround(cpus * 100000.0));
  if (quota < 1000) quota = 1000;  // the kernel's minimum is 1 ms per period
  return std::to_string(quota);
}

void add_limit(CgroupPlan& plan, const fs::path& dir, const std::string& controller,
               std::vector<std::pair<std::string, std::string>> files) {
  for (auto& d : plan.dirs) {
    if (d.dir == dir) {
      d.controllers.push_back(controller);
      for (auto& f : files) d.files.push_back(std::move(f));
      return;
    }
  }
  plan.dirs.push_back(CgroupDirPlan{dir, {controller}, std::move(files)});
}

bool writable_cgroup(const fs::path& dir) {
  return access(dir.c_str(), W_OK) == 0 && access((dir / "cgroup.procs").c_str(), W_OK) == 0;
}

// Not root: the directory `tnk setup` gave the user in the v1 hierarchy of `m`, when it is there and ours:
// the nearest one in our own cgroup or above it (setup puts it below the user's cgroup; an older setup
// put it at the top).
std::optional<fs::path> user_v1_dir(const CgroupMembership& m, const std::vector<CgroupMount>& mounts,
                                    const std::string& user) {
  auto leaf = naming::user_cgroup_name(user);
  if (!leaf.ok()) return std::nullopt;
  std::optional<fs::path> top = cgroup_dir(CgroupMembership{m.hierarchy, m.controllers, "/"}, mounts);
  if (!top) return std::nullopt;
  for (fs::path at = fs::path(m.path).relative_path();; at = at.parent_path()) {
    fs::path candidate = *top / at / *leaf;
    if (writable_cgroup(candidate)) return candidate.lexically_normal();
    if (at.empty()) return std::nullopt;
  }
}

// Why a plan found no place for some controllers (cgroup_fix says what gives them one).
std::string unplaced_why(const CgroupHost& host) {
  if (host.systemd && !host.systemd->manager_reachable) return scope_gap(*host.systemd).why;
  if (host.systemd) {
    std::string delegated;
    for (const auto& c : host.systemd->controllers) delegated += (delegated.empty() ? "" : " ") + c;
    return "systemd delegates only " + (delegated.empty() ? "no controller" : delegated) +
           (host.root ? " at the hierarchy's root" : " to " + host.user + "'s manager");
  }
  return host.root ? "no delegated cgroup v2 controller and no cgroup v1 hierarchy this process may write"
                   : "no cgroup subtree is delegated to " + host.user;
}

}  // namespace

std::string sandbox_cgroup_name(const std::string& name) {
  return name.rfind(naming::kSandboxIdPrefix, 0) == 0 ? name : std::string(naming::kSandboxIdPrefix) + name;
}

Result<CgroupHost> detect_cgroup_host() {
  TNK_ASSIGN_OR_RETURN(std::string self, read_file("/proc/self/cgroup"));
  TNK_ASSIGN_OR_RETURN(std::string mountinfo, read_file("/proc/self/mountinfo"));
  std::vector<CgroupMount> mounts = parse_cgroup_mounts(mountinfo);
  CgroupHost host;
  host.root = geteuid() == 0;
  if (!host.root) host.user = effective_user_name();
  bool settled = false;  // a supervisor in its scope's leaf: the scope is its own cgroup for the sandboxes
  for (const auto& m : parse_proc_cgroup(self)) {
    std::optional<fs::path> dir = cgroup_dir(m, mounts);
    if (!dir) continue;
    if (m.hierarchy == 0 && m.controllers.empty()) {
      settled = is_supervisor_leaf(*dir);
      host.v2_dir = settled ? dir->parent_path() : *dir;
      if (!host.root && !writable_cgroup(*host.v2_dir)) continue;  // not delegated to us
      host.v2_delegated = cgroup_words(*host.v2_dir / "cgroup.subtree_control");
      continue;
    }
    std::optional<fs::path> user_dir = host.root ? std::nullopt : user_v1_dir(m, mounts, host.user);
    for (const auto& c : m.controllers) {
      if (c.rfind("name=", 0) == 0) continue;
      host.v1[c] = *dir;
      if (user_dir) host.v1_user[c] = *user_dir;
    }
  }
  std::optional<fs::path> v2_mount = cgroup_v2_mount(mounts);
  if (!settled && host.v1.empty() && v2_mount) {
    SystemdFacts facts = read_systemd_facts(*v2_mount);
    if (facts.booted) host.systemd = std::move(facts);
  }
  return host;
}

std::optional<SystemdFacts> supervisor_scope(const CgroupHost& host) {
  if (!host.systemd || !host.systemd->manager_reachable) return std::nullopt;
  return host.systemd;
}

CgroupPlan plan_cgroups(const CgroupHost& host, const std::string& name, const Limits& limits) {
  CgroupPlan plan;
  std::vector<std::string> missing;
  const std::string leaf = sandbox_cgroup_name(name);
  auto place = [&](const std::string& controller, std::vector<std::pair<std::string, std::string>> v2_files,
                   std::vector<std::pair<std::string, std::string>> v1_files) {
    if (host.v2_dir && host.v2_delegated.count(controller) != 0) {
      add_limit(plan, *host.v2_dir / leaf, controller, std::move(v2_files));
    } else if (supervisor_scope(host) && host.systemd->controllers.count(controller) != 0) {
      add_limit(plan, fs::path(kScopeStandIn) / leaf, controller, std::move(v2_files));
      plan.in_supervisor_scope = true;
    } else if (host.root && host.v1.count(controller) != 0) {
      add_limit(plan, host.v1.at(controller) / leaf, controller, std::move(v1_files));
    } else if (!host.root && host.v1_user.count(controller) != 0) {
      add_limit(plan, host.v1_user.at(controller) / leaf, controller, std::move(v1_files));
    } else {
      missing.push_back(controller);
    }
  };
  std::string pids = std::to_string(limits.pids);
  place("pids", {{"pids.max", pids}}, {{"pids.max", pids}});
  if (limits.memory_bytes) {
    std::string bytes = std::to_string(*limits.memory_bytes);
    place("memory", {{"memory.max", bytes}}, {{"memory.limit_in_bytes", bytes}});
  }
  if (limits.cpus) {
    std::string quota = cpu_quota(*limits.cpus);
    place("cpu", {{"cpu.max", quota + " 100000"}}, {{"cpu.cfs_period_us", "100000"}, {"cpu.cfs_quota_us", quota}});
  }
  if (missing.empty()) return plan;
  plan.unapplied.push_back({std::move(missing), unplaced_why(host), cgroup_fix(host)});
  return plan;
}

std::string cgroup_fix(const CgroupHost& host) {
  if (!host.v1.empty()) {
    return host.root ? "mount the cgroup v1 hierarchy of each controller"
                     : "run `" + idmap::add_range_command(host.user) + "` once";
  }
  if (host.systemd && !host.systemd->manager_reachable) return scope_gap(*host.systemd).fix;
  if (host.systemd) {
    return "let systemd delegate them: a drop-in for user@.service with `[Service]` `Delegate=cpu memory pids` "
           "(`sudo systemctl edit user@.service`), then log in again (docs/rootless.md)";
  }
  return host.root ? "run tnk from the cgroup v2 hierarchy's root cgroup, or on a host whose cgroups systemd manages"
                   : "on a cgroup v2 host tnk places a sandbox's cgroups through systemd, which does not run here "
                     "(docs/rootless.md)";
}

std::vector<UnappliedLimits> foresee_unapplied(const CgroupPlan& plan) {
  std::vector<UnappliedLimits> out;
  if (plan.in_supervisor_scope) return out;  // the scope does not exist yet; systemd makes it ours
  for (const auto& d : plan.dirs) {
    fs::path parent = d.dir.parent_path();
    if (access(parent.c_str(), W_OK) == 0) continue;
    int err = errno;
    out.push_back({d.controllers, "cannot create cgroup " + d.dir.string() + ": " + std::strerror(err), ""});
  }
  return out;
}

Result<std::vector<UnappliedLimits>> apply_cgroups(const CgroupPlan& plan) {
  if (plan.in_supervisor_scope) {
    return failed("the sandbox's cgroups belong in the supervisor's systemd scope, and this process is not in one",
                  "report this: the supervisor should have been started by systemd-run");
  }
  std::vector<UnappliedLimits> unapplied = plan.unapplied;
  std::vector<fs::path> created;
  for (const auto& d : plan.dirs) {
    if (mkdir(d.dir.c_str(), 0755) != 0 && errno != EEXIST) {
      int err = errno;
      if (err != EACCES && err != EPERM && err != EROFS) {
        (void)remove_cgroup_dirs(created);
        return sys_error(err, "creating cgroup " + d.dir.string());
      }
      unapplied.push_back({d.controllers, "cannot create cgroup " + d.dir.string() + ": " + std::strerror(err), ""});
      continue;
    }
    created.push_back(d.dir);
    for (const auto& [file, value] : d.files) {
      Status written = write_kernel_file(d.dir / file, value);
      if (!written.ok()) {
        (void)remove_cgroup_dirs(created);
        return std::move(written).error();
      }
    }
  }
  return unapplied;
}

std::string unapplied_note(const UnappliedLimits& unapplied) {
  return join(unapplied.controllers, "/") + " limits not applied: " + unapplied.why +
         (unapplied.fix.empty() ? "" : " (" + unapplied.fix + ")");
}

Status require_limits(const std::vector<UnappliedLimits>& unapplied, bool allow_unlimited) {
  std::vector<std::string> missing;  // pids and memory, in the plan's order
  std::vector<std::string> reasons;
  std::vector<std::string> fixes;
  for (const auto& u : unapplied) {
    std::vector<std::string> required;
    for (const auto& c : u.controllers) {
      if (c == "pids" || c == "memory") required.push_back(c);
    }
    if (required.empty()) continue;
    missing.insert(missing.end(), required.begin(), required.end());
    reasons.push_back(unapplied.size() == 1 ? u.why : join(required, " and ") + ": " + u.why);
    if (!u.fix.empty() && std::find(fixes.begin(), fixes.end(), u.fix) == fixes.end()) fixes.push_back(u.fix);
  }
  if (missing.empty() || allow_unlimited) return ok_status();
  const std::string limits = join(missing, " and ") + (missing.size() > 1 ? " limits" : " limit");
  fixes.push_back("or, to start without them, set allow_unlimited = true in tnk.toml (or TNK_ALLOW_UNLIMITED=1)");
  return permission_denied("refusing to start the sandbox without its " + limits + ": " + join(reasons, "; ") +
                               " (a fork bomb or a memory hog inside would reach the host)",
                           join(fixes, "; "));
}

Status check_limits_before_start(const std::string& name, const Limits& limits, bool allow_unlimited) {
  if (allow_unlimited) return ok_status();  // the start goes on as before; its notes say what is missing
  TNK_ASSIGN_OR_RETURN(CgroupHost host, detect_cgroup_host());
  CgroupPlan plan = plan_cgroups(host, name, limits);
  std::vector<UnappliedLimits> unapplied = plan.unapplied;
  for (auto& u : foresee_unapplied(plan)) unapplied.push_back(std::move(u));
  return require_limits(unapplied, false);
}

Result<MadeCgroups> make_sandbox_cgroups(const std::string& name, const Limits& limits, bool allow_unlimited) {
  TNK_ASSIGN_OR_RETURN(CgroupHost host, detect_cgroup_host());
  CgroupPlan plan = plan_cgroups(host, name, limits);
  TNK_ASSIGN_OR_RETURN(std::vector<UnappliedLimits> unapplied, apply_cgroups(plan));
  MadeCgroups made;
  for (const auto& d : plan.dirs) {
    UniqueFd procs(open((d.dir / "cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
    if (!procs.valid()) continue;  // not created (in `unapplied`)
    made.dirs.push_back(d.dir);
    made.procs.push_back(std::move(procs));
  }
  // The command line checked the plan before it made anything (check_limits_before_start); this catches
  // what only creating the directories shows.
  if (Status required = require_limits(unapplied, allow_unlimited); !required.ok()) {
    (void)remove_cgroup_dirs(made.dirs);
    return std::move(required).error();
  }
  for (const auto& u : unapplied) made.notes.push_back(unapplied_note(u));
  return made;
}

int join_cgroups(const std::vector<int>& procs_fds) {
  for (int fd : procs_fds) {
    if (write(fd, "0", 1) != 1) return errno;
  }
  return 0;
}

Status remove_cgroup_dirs(const std::vector<fs::path>& dirs) {
  for (const auto& dir : dirs) {
    for (int attempt = 0;; ++attempt) {
      if (rmdir(dir.c_str()) == 0 || errno == ENOENT) break;
      if (errno != EBUSY || attempt >= 50) {
        return sys_error(errno, "removing cgroup " + dir.string(),
                         errno == EBUSY ? "processes of the sandbox are still running" : "");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  return ok_status();
}

Result<std::vector<fs::path>> cgroup_dirs_for_name(const std::string& name) {
  TNK_ASSIGN_OR_RETURN(CgroupHost host, detect_cgroup_host());
  std::vector<fs::path> dirs;
  auto add = [&](const fs::path& p) {
    fs::path dir = p / sandbox_cgroup_name(name);
    for (const auto& d : dirs) {
      if (d == dir) return;
    }
    dirs.push_back(dir);
  };
  if (host.v2_dir) add(*host.v2_dir);
  for (const auto& [controller, dir] : host.v1) add(dir);
  for (const auto& [controller, dir] : host.v1_user) add(dir);
  return dirs;
}

Result<std::vector<fs::path>> process_cgroup_dirs(pid_t pid) {
  TNK_ASSIGN_OR_RETURN(std::string theirs, read_file("/proc/" + std::to_string(pid) + "/cgroup"));
  TNK_ASSIGN_OR_RETURN(std::string ours, read_file("/proc/self/cgroup"));
  TNK_ASSIGN_OR_RETURN(std::string mountinfo, read_file("/proc/self/mountinfo"));
  std::vector<CgroupMount> mounts = parse_cgroup_mounts(mountinfo);
  std::vector<CgroupMembership> mine = parse_proc_cgroup(ours);
  std::vector<fs::path> dirs;
  for (const auto& m : parse_proc_cgroup(theirs)) {
    bool same = false;
    for (const auto& o : mine) same = same || (o.hierarchy == m.hierarchy && o.path == m.path);
    if (same) continue;
    std::optional<fs::path> dir = cgroup_dir(m, mounts);
    if (dir) dirs.push_back(*dir);
  }
  return dirs;
}

uint64_t oom_kills(const std::vector<fs::path>& dirs) {
  uint64_t kills = 0;
  for (const auto& dir : dirs) {
    for (const char* file : {"memory.events", "memory.oom_control"}) {
      auto text = read_file(dir / file);
      if (!text.ok()) continue;
      size_t at = text->find("oom_kill ");
      if (at != std::string::npos) kills += std::strtoull(text->c_str() + at + 9, nullptr, 10);
    }
  }
  return kills;
}

}  // namespace tnk::linux
