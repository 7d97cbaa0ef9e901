// The processes start() forks: the setup child (joins the cgroups and the sandbox's namespaces, opens the
// overlay directories and, for a rootless sandbox, makes the binds PID 1 mounts) and PID 1 (builds the
// root, then reaps and handles SIGTERM).
// Everything here runs after fork: only system calls and data prepared by the caller.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "backend/ns/namespaces.h"

namespace tnk::ns {

// Prepared by start() before fork; every fd is O_CLOEXEC and owned by start().
struct InitPlan {
  int report_fd = -1;   // write end of the report pipe
  int release_fd = -1;  // the setup child exits at EOF here (after the caller opened its pid_for_children)
  std::array<int, kNsCount> ns_fds{};  // the sandbox's namespaces (namespaces.h), but kPidNs: the setup
                                       // child makes the pid namespace, whose first process is PID 1
  std::vector<int> cgroup_procs_fds;
  // Run as root: detached binds made by start() in the host's mount namespace (idmapped where the owner
  // must change). Rootless (all -1): the setup child makes plain binds of the paths below in the
  // sandbox's mount namespace, where the user's capabilities count.
  int lower_fd = -1;    // read-only bind of the image tree
  int project_fd = -1;  // bind of the project
  int hosts_fd = -1;    // read-only binds of the generated files
  int resolv_fd = -1;
  int git_dir_fd = -1;  // bind of git_common_dir (run as root: idmapped like the project)
  bool rootless = false;
  std::string image_root, project_dir, hosts_file, resolv_file;
  // Host paths, opened by the setup child inside the new mount namespace (where binds must come from).
  std::string staging_dir;
  std::string upper_dir;
  std::string work_dir;
  std::string mount_point;                // relative to the new root, e.g. "workspace"
  std::string review_upper, review_work;  // review mode: the project's overlay layer (empty: direct)
  std::string hostname;
  std::vector<std::string> protected_paths;  // project-relative: made read-only (linux/protect_paths.h)
  // A linked worktree's common git dir: shared at its own host path inside, these paths read-only.
  std::string git_common_dir;
  std::vector<std::string> git_protected_paths;
};

// What PID 1 mounts from: the directories the setup child opened (O_PATH) in the sandbox's mount
// namespace, and the detached binds (from the plan, or made by the setup child).
struct OpenedDirs {
  int staging = -1;
  int upper = -1;
  int work = -1;
  int lower = -1;
  int project = -1;
  int hosts = -1;
  int resolv = -1;
  int git_dir = -1;
  int review_upper = -1;  // review mode only
  int review_work = -1;
};

// The setup child's body: never returns.
[[noreturn]] void run_setup_child(const InitPlan& plan);

}  // namespace tnk::ns
