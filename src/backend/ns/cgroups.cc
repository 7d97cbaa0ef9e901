#include "backend/ns/cgroups.h"

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

namespace tnk::ns {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) parts.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size()) {
      int value = 0;
      bool octal = true;
      for (size_t k = 1; k <= 3; ++k) {
        char c = text[i + k];
        octal = octal && c >= '0' && c <= '7';
        value = value * 8 + (c - '0');
      }
      if (octal) {
        out.push_back(static_cast<char>(value));
        i += 3;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

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

// Not root: the directory `tnk setup` gave the user in the v1 hierarchy of `m`, when it is there and ours.
std::optional<fs::path> user_v1_dir(const CgroupMembership& m, const std::vector<CgroupMount>& mounts,
                                    const std::string& user) {
  auto leaf = naming::user_cgroup_name(user);
  if (!leaf.ok()) return std::nullopt;
  std::optional<fs::path> top = cgroup_dir(CgroupMembership{m.hierarchy, m.controllers, "/"}, mounts);
  if (!top || !writable_cgroup(*top / *leaf)) return std::nullopt;
  return *top / *leaf;
}

}  // namespace

std::vector<CgroupMembership> parse_proc_cgroup(std::string_view text) {
  std::vector<CgroupMembership> out;
  for (const auto& line : split(text, '\n')) {
    size_t first = line.find(':');
    size_t second = first == std::string::npos ? std::string::npos : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    CgroupMembership m;
    m.hierarchy = std::atoi(line.substr(0, first).c_str());
    m.controllers = split(std::string_view(line).substr(first + 1, second - first - 1), ',');
    m.path = line.substr(second + 1);
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<CgroupMount> parse_cgroup_mounts(std::string_view mountinfo) {
  std::vector<CgroupMount> out;
  for (const auto& line : split(mountinfo, '\n')) {
    std::vector<std::string> fields = split(line, ' ');
    size_t dash = 0;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (dash < 5 || dash + 2 >= fields.size()) continue;
    const std::string& type = fields[dash + 1];
    if (type != "cgroup" && type != "cgroup2") continue;
    CgroupMount m;
    m.v2 = type == "cgroup2";
    m.root = unescape(fields[3]);
    m.mount_point = unescape(fields[4]);
    if (!m.v2 && dash + 3 < fields.size()) {
      for (auto& opt : split(fields[dash + 3], ',')) {
        if (opt != "rw" && opt != "ro") m.controllers.push_back(opt);
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::optional<fs::path> cgroup_dir(const CgroupMembership& membership, const std::vector<CgroupMount>& mounts) {
  bool v2 = membership.hierarchy == 0 && membership.controllers.empty();
  for (const auto& m : mounts) {
    if (m.v2 != v2) continue;
    if (!v2 && m.controllers != membership.controllers) continue;
    const std::string& path = membership.path;
    if (m.root == "/") return fs::path(m.mount_point.string() + (path == "/" ? "" : path));
    if (path == m.root) return m.mount_point;
    if (path.rfind(m.root + "/", 0) == 0) return fs::path(m.mount_point.string() + path.substr(m.root.size()));
  }
  return std::nullopt;
}

Result<CgroupHost> detect_cgroup_host() {
  TNK_ASSIGN_OR_RETURN(std::string self, read_file("/proc/self/cgroup"));
  TNK_ASSIGN_OR_RETURN(std::string mountinfo, read_file("/proc/self/mountinfo"));
  std::vector<CgroupMount> mounts = parse_cgroup_mounts(mountinfo);
  CgroupHost host;
  host.root = geteuid() == 0;
  if (!host.root) host.user = effective_user_name();
  for (const auto& m : parse_proc_cgroup(self)) {
    std::optional<fs::path> dir = cgroup_dir(m, mounts);
    if (!dir) continue;
    if (m.hierarchy == 0 && m.controllers.empty()) {
      host.v2_dir = *dir;
      if (!host.root && !writable_cgroup(*dir)) continue;  // not delegated to us
      auto enabled = read_file(*dir / "cgroup.subtree_control");
      if (enabled.ok()) {
        for (auto& c : split(*enabled, ' ')) {
          if (!c.empty() && c.back() == '\n') c.pop_back();
          if (!c.empty()) host.v2_delegated.insert(c);
        }
      }
      continue;
    }
    std::optional<fs::path> user_dir = host.root ? std::nullopt : user_v1_dir(m, mounts, host.user);
    for (const auto& c : m.controllers) {
      if (c.rfind("name=", 0) == 0) continue;
      host.v1[c] = *dir;
      if (user_dir) host.v1_user[c] = *user_dir;
    }
  }
  return host;
}

CgroupPlan plan_cgroups(const CgroupHost& host, const std::string& name, const Limits& limits) {
  CgroupPlan plan;
  std::vector<std::string> missing;
  const std::string leaf = "tnk-" + name;
  auto place = [&](const std::string& controller, std::vector<std::pair<std::string, std::string>> v2_files,
                   std::vector<std::pair<std::string, std::string>> v1_files) {
    if (host.v2_dir && host.v2_delegated.count(controller) != 0) {
      add_limit(plan, *host.v2_dir / leaf, controller, std::move(v2_files));
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
  plan.unapplied.push_back({std::move(missing),
                            host.root
                                ? "no delegated cgroup v2 controller and no cgroup v1 hierarchy this process may write"
                                : "no cgroup subtree is delegated to " + host.user,
                            cgroup_fix(host)});
  return plan;
}

std::string cgroup_fix(const CgroupHost& host) {
  if (host.v1.empty()) {
    return "tnk cannot place a sandbox's cgroups on a cgroup v2 host yet (security review M5, open; docs/rootless.md)";
  }
  return host.root ? "mount the cgroup v1 hierarchy of each controller"
                   : "run `" + idmap::add_range_command(host.user) + "` once";
}

std::vector<UnappliedLimits> foresee_unapplied(const CgroupPlan& plan) {
  std::vector<UnappliedLimits> out;
  for (const auto& d : plan.dirs) {
    fs::path parent = d.dir.parent_path();
    if (access(parent.c_str(), W_OK) == 0) continue;
    int err = errno;
    out.push_back({d.controllers, "cannot create cgroup " + d.dir.string() + ": " + std::strerror(err), ""});
  }
  return out;
}

Result<std::vector<UnappliedLimits>> apply_cgroups(const CgroupPlan& plan) {
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
    fs::path dir = p / ("tnk-" + name);
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

}  // namespace tnk::ns
