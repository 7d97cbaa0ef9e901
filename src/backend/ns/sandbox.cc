// start() and stop(): the host side of a sandbox's life. start() prepares what must be made from outside
// (directories, generated files, cgroups, the namespaces, and when run as root the detached idmapped
// trees), then forks the setup child (init.cc), which creates PID 1; the children report {step, errno}
// back over a pipe.
#include "backend/ns/sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <sstream>
#include <string>

#include "backend/ns/init.h"
#include "backend/ns/start_errors.h"
#include "backend/ns/userns.h"
#include "core/files.h"
#include "idmap/userns.h"
#include "linux/cgroups.h"
#include "linux/syscalls.h"
#include "review/layer.h"

namespace tnk::ns {

namespace fs = std::filesystem;

namespace {

constexpr std::chrono::milliseconds kStartTimeout{30000};
constexpr std::chrono::milliseconds kKillWait{5000};
constexpr const char* kHostsFile = "hosts";
constexpr const char* kResolvFile = "resolv.conf";

// Host-side resources of a start in progress; destroying it undoes what was not handed over.
struct Prepared {
  std::vector<pid_t> helpers;  // killed user namespace holders, reaped when the setup child has reported
  Namespaces namespaces;
  UniqueFd lower, project, hosts, resolv, git_dir;  // run as root only
  std::vector<fs::path> cgroup_dirs;
  std::vector<UniqueFd> cgroup_procs;
  std::vector<std::string> notes;
  bool keep_cgroups = false;
  ~Prepared() {
    for (pid_t pid : helpers) linux::sys::wait_for(pid);
    if (!keep_cgroups) (void)linux::remove_cgroup_dirs(cgroup_dirs);
  }
};

// Run as root, the directory is given to the sandbox's root here; rootless, the setup child does it
// (as the range's root, which the user cannot chown to).
Status ensure_owned_dir(const fs::path& dir, const char* what, const SandboxSpec& spec) {
  const HostIds ids = spec.host_ids;
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return sys_error(errno, std::string("checking the ") + what + " " + dir.string());
    TNK_RETURN_IF_ERROR(make_dirs(dir, 0755));
    if (lstat(dir.c_str(), &st) != 0) return sys_error(errno, std::string("checking the ") + what + " " + dir.string());
  }
  if (!S_ISDIR(st.st_mode)) return failed(std::string("the ") + what + " " + dir.string() + " is not a directory");
  if (!spec.rootless && (st.st_uid != ids.uid || st.st_gid != ids.gid)) {
    if (lchown(dir.c_str(), ids.uid, ids.gid) != 0) {
      return sys_error(errno, std::string("giving the ") + what + " " + dir.string() + " to the sandbox's root (" +
                                  std::to_string(ids.uid) + ")");
    }
  }
  return ok_status();
}

// Review mode: the layer's upper directory is `agent`'s (review/layer.h); the work directory the
// mounter's, the sandbox's root. Rootless both stay the user's, whom the map shows as `agent` and lets
// its root use.
Status prepare_review_layer(const SandboxSpec& spec) {
  if (spec.review_upper.empty()) return ok_status();
  const HostIds& ids = spec.host_ids;
  std::optional<review::Owner> agent;
  if (!spec.rootless) agent = review::Owner{ids.uid + kAgentId, ids.gid + kAgentId};
  TNK_RETURN_IF_ERROR(review::prepare_layer_top(spec.review_upper, spec.project_dir, agent));
  TNK_RETURN_IF_ERROR(make_dirs(spec.review_work, 0700));
  struct stat upper {
  }, work{};
  if (lstat(spec.review_upper.c_str(), &upper) != 0 || lstat(spec.review_work.c_str(), &work) != 0) {
    return sys_error(errno, "checking the review layer " + spec.review_upper.string());
  }
  if (upper.st_dev != work.st_dev) return failed("the review layer's directories are on different filesystems");
  if (!spec.rootless && lchown(spec.review_work.c_str(), ids.uid, ids.gid) != 0) {
    return sys_error(errno,
                     "giving the review layer's work directory " + spec.review_work.string() + " to the sandbox");
  }
  return ok_status();
}

Status prepare_host_dirs(const SandboxSpec& spec) {
  TNK_RETURN_IF_ERROR(ensure_owned_dir(spec.upper_dir, "overlay upper directory", spec));
  TNK_RETURN_IF_ERROR(ensure_owned_dir(spec.work_dir, "overlay work directory", spec));
  struct stat upper {
  }, work{};
  if (stat(spec.upper_dir.c_str(), &upper) != 0 || stat(spec.work_dir.c_str(), &work) != 0) {
    return sys_error(errno, "checking the overlay directories");
  }
  if (upper.st_dev != work.st_dev) {
    return failed("the overlay directories " + spec.upper_dir.string() + " and " + spec.work_dir.string() +
                  " are on different filesystems");
  }
  TNK_RETURN_IF_ERROR(make_dirs(spec.staging_dir, 0700));
  return prepare_review_layer(spec);
}

Status write_runtime_file(const SandboxSpec& spec, const char* name, const std::string& content) {
  fs::path path = spec.runtime_dir / name;
  TNK_RETURN_IF_ERROR(write_file_atomic(path, content, 0644));
  // Owned by the sandbox's root (not `nobody`) inside; the bind is read-only either way. Rootless, the
  // file stays the user's (`agent` inside): the user cannot give it to the range.
  if (!spec.rootless && lchown(path.c_str(), spec.host_ids.uid, spec.host_ids.gid) != 0) {
    return sys_error(errno, "changing the owner of " + path.string());
  }
  return ok_status();
}

Status write_runtime_files(const SandboxSpec& spec) {
  TNK_RETURN_IF_ERROR(write_runtime_file(spec, kHostsFile, spec.etc_hosts));
  return write_runtime_file(spec, kResolvFile, spec.resolv_conf);
}

// Run as root: detached binds made here, in the host's mount namespace, idmapped where the owner must
// change: the root-owned image to the sandbox's range, the project's owner to `agent`.
Status make_trees(const SandboxSpec& spec, Prepared& p) {
  TNK_ASSIGN_OR_RETURN(p.lower, detached_tree(spec.image_root, MOUNT_ATTR_RDONLY, p.namespaces.fd(kUserNs)));
  struct stat project {};
  if (stat(spec.project_dir.c_str(), &project) != 0) {
    return sys_error(errno, "checking the project " + spec.project_dir.string());
  }
  if (!S_ISDIR(project.st_mode)) return failed("the project " + spec.project_dir.string() + " is not a directory");
  {
    // The project's owner (only) shows as `agent` inside; files agent creates land owned by that owner.
    idmap::UsernsMaps owner_to_agent{{{project.st_uid, spec.host_ids.uid + kAgentId, 1}},
                                     {{project.st_gid, spec.host_ids.gid + kAgentId, 1}}};
    TNK_ASSIGN_OR_RETURN(UniqueFd project_ns, idmap::create_userns(owner_to_agent, &p.helpers));
    TNK_ASSIGN_OR_RETURN(p.project, detached_tree(spec.project_dir, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                                                  project_ns.get(), Submounts::kInclude));
    // The worktree's git dir is the same owner's (git refuses a repository of another owner).
    if (!spec.git_common_dir.empty()) {
      TNK_ASSIGN_OR_RETURN(p.git_dir, detached_tree(spec.git_common_dir, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                                                    project_ns.get(), Submounts::kInclude));
    }
  }
  constexpr uint64_t kReadOnly = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
  TNK_RETURN_IF_ERROR(write_runtime_files(spec));
  TNK_ASSIGN_OR_RETURN(p.hosts, detached_tree(spec.runtime_dir / kHostsFile, kReadOnly));
  TNK_ASSIGN_OR_RETURN(p.resolv, detached_tree(spec.runtime_dir / kResolvFile, kReadOnly));
  return ok_status();
}

Status make_cgroups(const SandboxSpec& spec, Prepared& p) {
  TNK_ASSIGN_OR_RETURN(linux::MadeCgroups made,
                       linux::make_sandbox_cgroups(spec.cgroup_name, spec.limits, spec.allow_unlimited));
  p.cgroup_dirs = std::move(made.dirs);
  p.cgroup_procs = std::move(made.procs);
  p.notes.insert(p.notes.end(), made.notes.begin(), made.notes.end());
  return ok_status();
}

InitPlan make_plan(const SandboxSpec& spec, const Prepared& p, int report_fd) {
  InitPlan plan;
  plan.report_fd = report_fd;
  for (size_t i = 0; i < kNsCount; ++i) plan.ns_fds[i] = p.namespaces.fds[i].get();
  for (const auto& fd : p.cgroup_procs) plan.cgroup_procs_fds.push_back(fd.get());
  plan.rootless = spec.rootless.has_value();
  plan.image_root = spec.image_root.string();
  plan.project_dir = spec.project_dir.string();
  plan.hosts_file = (spec.runtime_dir / kHostsFile).string();
  plan.resolv_file = (spec.runtime_dir / kResolvFile).string();
  plan.lower_fd = p.lower.get();
  plan.project_fd = p.project.get();
  plan.hosts_fd = p.hosts.get();
  plan.resolv_fd = p.resolv.get();
  plan.staging_dir = spec.staging_dir.string();
  plan.upper_dir = spec.upper_dir.string();
  plan.work_dir = spec.work_dir.string();
  plan.mount_point = spec.mount_point.substr(1);
  plan.hostname = spec.hostname;
  plan.protected_paths = spec.protected_paths;
  plan.review_upper = spec.review_upper.string();
  plan.review_work = spec.review_work.string();
  plan.git_common_dir = spec.git_common_dir.string();
  plan.git_protected_paths = spec.git_protected_paths;
  plan.git_dir_fd = p.git_dir.get();
  return plan;
}

void kill_and_reap(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  linux::sys::wait_for(pid);
}

// How many pid namespaces deep `pid` is: the number of ids on its NSpid line (0 when unknown).
// /proc/<pid>/status is readable without ptrace access, for zombies too.
size_t pid_ns_depth(const std::string& pid) {
  auto status = read_file("/proc/" + pid + "/status");
  if (!status.ok()) return 0;
  std::istringstream lines(*status);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("NSpid:")) continue;
    std::istringstream ids(line.substr(6));
    size_t depth = 0;
    for (std::string id; ids >> id;) ++depth;
    return depth;
  }
  return 0;
}

// Whether our child `child` is in the pid namespace `ns`. Its /proc/<pid>/ns/pid says, when we may read
// it; rootless, we may not for a session of the range's root (a --root session): then being one pid
// namespace deeper than us does, the sandbox's being the caller's only child pid namespace.
bool in_pid_namespace(pid_t child, const struct stat& ns) {
  std::string pid = std::to_string(child);
  struct stat st {};
  if (stat(("/proc/" + pid + "/ns/pid").c_str(), &st) == 0) return st.st_ino == ns.st_ino && st.st_dev == ns.st_dev;
  if (errno != EACCES && errno != EPERM) return false;
  size_t ours = pid_ns_depth("self");
  return ours > 0 && pid_ns_depth(pid) == ours + 1;
}

// The default ReapHook: reaps the caller's children that have exited inside the pid namespace `ns`
// (the sandbox's sessions), keeping their statuses in `reaped` when given. A zombie keeps its ns link
// until reaped.
void reap_session_zombies(const struct stat& ns, std::vector<ReapedSession>* reaped) {
  std::string children_file = "/proc/self/task/" + std::to_string(gettid()) + "/children";
  auto children = read_file(children_file);
  if (!children.ok()) return;
  std::istringstream in(*children);
  pid_t child;
  while (in >> child) {
    if (!in_pid_namespace(child, ns)) continue;
    int status = 0;
    if (waitpid(child, &status, WNOHANG | __WALL) == child && reaped) reaped->push_back({child, status});
  }
}

// Waits until `pid` (our child) has exited and reaps it. False when `timeout` passed first.
bool wait_exit(pid_t pid, std::chrono::milliseconds timeout, const ReapHook& reap_sessions) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0U)));
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG | __WALL);
    if (r == pid || (r < 0 && errno == ECHILD)) return true;  // ECHILD: already reaped by the caller
    if (reap_sessions) reap_sessions();
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    // PID 1 may wait for session zombies: poll in slices so the hook runs meanwhile.
    int slice = static_cast<int>(std::min<long long>(left.count(), reap_sessions ? 10 : 50));
    if (pidfd.valid()) {
      pollfd pfd{pidfd.get(), POLLIN, 0};
      poll(&pfd, 1, slice);
    } else {
      usleep(static_cast<useconds_t>(slice) * 1000U);
    }
  }
}

}  // namespace

HostIds root_sandbox_ids(const fs::path& upper_dir) {
  struct stat st {};
  if (lstat(upper_dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid != 0) return {st.st_uid, st.st_gid};
  return root_ids_for_new_sandbox();
}

HostIds root_ids_for_new_sandbox() {
  const idmap::RootRanges ranges = idmap::root_ranges();
  return {ranges.uids.start, ranges.gids.start};
}

idmap::UsernsMaps root_run_maps(HostIds ids) { return {{{0, ids.uid, kIdCount}}, {{0, ids.gid, kIdCount}}, false}; }

Result<Sandbox> start(const SandboxSpec& spec) {
  TNK_RETURN_IF_ERROR(validate_spec(spec));
  TNK_RETURN_IF_ERROR(prepare_host_dirs(spec));
  Prepared p;
  TNK_RETURN_IF_ERROR(make_cgroups(spec, p));
  std::vector<int> cgroup_fds;
  for (const auto& fd : p.cgroup_procs) cgroup_fds.push_back(fd.get());
  TNK_ASSIGN_OR_RETURN(p.namespaces, create_namespaces(spec.rootless ? idmap::sandbox_maps(*spec.rootless, kAgentId)
                                                                     : root_run_maps(spec.host_ids),
                                                       cgroup_fds));
  if (spec.rootless) {
    TNK_RETURN_IF_ERROR(write_runtime_files(spec));
  } else {
    TNK_RETURN_IF_ERROR(make_trees(spec, p));
  }
  TNK_ASSIGN_OR_RETURN(auto pipe, make_pipe());
  TNK_ASSIGN_OR_RETURN(auto release, make_pipe());
  InitPlan plan = make_plan(spec, p, pipe.write_end.get());
  plan.release_fd = release.read_end.get();
  pid_t child = fork();
  if (child < 0) return sys_error(errno, "forking the sandbox's setup process");
  if (child == 0) {
    close(pipe.read_end.get());  // so that PID 1's ready report fails if the caller is gone
    close(release.write_end.get());
    run_setup_child(plan);
  }
  pipe.write_end.reset();
  release.read_end.reset();
  std::vector<linux::sys::Report> reports;
  Status read = linux::sys::read_reports(pipe.read_end.get(), kStartTimeout, &reports);
  StartOutcome outcome = interpret_start_reports(reports, spec);
  if (!read.ok()) {
    kill_and_reap(outcome.init_pid);
    kill_and_reap(child);
    return std::move(read).error();
  }
  // The setup child waits to be released: its pid_for_children is the only handle on the sandbox's pid
  // namespace that a rootless caller may open (PID 1 runs as the range's root).
  if (outcome.error.message.empty() && outcome.ready) {
    std::string path = "/proc/" + std::to_string(child) + "/ns/pid_for_children";
    p.namespaces.fds[kPidNs].reset(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!p.namespaces.fds[kPidNs].valid()) outcome.error = sys_error(errno, "opening " + path);
  }
  release.write_end.reset();
  linux::sys::wait_for(child);
  if (!outcome.error.message.empty() || !outcome.ready) {
    kill_and_reap(outcome.init_pid);
    if (!outcome.error.message.empty()) return outcome.error;
    return failed("the sandbox's PID 1 exited during setup without saying why");
  }
  p.keep_cgroups = true;
  // PID 1 is a copy of its caller, so it can look big to the OOM killer; a sandbox that hits its
  // memory limit must lose the process that used the memory, never PID 1 (which would end it all).
  (void)write_kernel_file("/proc/" + std::to_string(outcome.init_pid) + "/oom_score_adj", "-1000");
  Sandbox sandbox;
  sandbox.init_pid = outcome.init_pid;
  sandbox.namespaces = std::move(p.namespaces);
  sandbox.notes = std::move(p.notes);
  sandbox.notes.insert(sandbox.notes.end(), outcome.notes.begin(), outcome.notes.end());
  return sandbox;
}

namespace {

// `pid_ns_fd`: the sandbox's pid namespace, -1 to read it from /proc/<init_pid>/ns/pid.
Status stop_processes(pid_t init_pid, std::chrono::milliseconds grace, const ReapHook& reap_sessions, int pid_ns_fd,
                      std::vector<ReapedSession>* reaped) {
  if (init_pid <= 0) return usage_error("stopping a sandbox: no PID 1 given");
  std::vector<fs::path> cgroups;
  auto dirs = linux::process_cgroup_dirs(init_pid);  // read while it still exists
  if (dirs.ok()) {
    for (const auto& d : *dirs) {
      if (d.filename().string().rfind("tnk-", 0) == 0) cgroups.push_back(d);
    }
  }
  struct stat ns {};
  std::string ns_link = "/proc/" + std::to_string(init_pid) + "/ns/pid";
  ReapHook reap = reap_sessions;
  bool known = pid_ns_fd >= 0 ? fstat(pid_ns_fd, &ns) == 0 : stat(ns_link.c_str(), &ns) == 0;
  if (!reap && known) reap = [ns, reaped] { reap_session_zombies(ns, reaped); };
  if (kill(init_pid, SIGTERM) != 0 && errno != ESRCH) {
    return sys_error(errno, "sending SIGTERM to the sandbox's PID 1 (pid " + std::to_string(init_pid) + ")");
  }
  if (!wait_exit(init_pid, grace, reap)) {
    kill(init_pid, SIGKILL);
    if (!wait_exit(init_pid, kKillWait, reap)) {
      return failed("the sandbox's PID 1 (pid " + std::to_string(init_pid) + ") did not exit after SIGKILL",
                    "the kernel keeps PID 1 until every exited session of the sandbox is reaped: the reap "
                    "hook given to stop() must reap the sandbox's session pids");
    }
  }
  return linux::remove_cgroup_dirs(cgroups);
}

}  // namespace

Status stop(pid_t init_pid, std::chrono::milliseconds grace, const ReapHook& reap_sessions) {
  return stop_processes(init_pid, grace, reap_sessions, -1, nullptr);
}

Status stop(const Sandbox& sandbox, std::chrono::milliseconds grace, std::vector<ReapedSession>* reaped) {
  return stop_processes(sandbox.init_pid, grace, {}, sandbox.namespaces.fd(kPidNs), reaped);
}

Status remove_cgroups(const std::string& cgroup_name) {
  TNK_RETURN_IF_ERROR(validate_cgroup_name(cgroup_name));
  TNK_ASSIGN_OR_RETURN(std::vector<fs::path> dirs, linux::cgroup_dirs_for_name(cgroup_name));
  return linux::remove_cgroup_dirs(dirs);
}

}  // namespace tnk::ns
