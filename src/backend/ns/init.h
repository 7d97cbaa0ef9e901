// The processes start() forks: the setup child (joins the cgroups and the user namespace, creates the other
// namespaces, opens the overlay directories) and PID 1 (builds the root, then reaps and handles SIGTERM).
// Everything here runs after fork: only system calls and data prepared by the caller.
#pragma once

#include <string>
#include <vector>

namespace tnk::ns {

// Prepared by start() before fork; every fd is O_CLOEXEC and owned by start().
struct InitPlan {
  int report_fd = -1;  // write end of the report pipe
  int userns_fd = -1;  // the sandbox's user namespace
  std::vector<int> cgroup_procs_fds;
  int lower_fd = -1;    // detached, idmapped, read-only bind of the image tree
  int project_fd = -1;  // detached, idmapped bind of the project
  int hosts_fd = -1;    // detached read-only binds of the generated files
  int resolv_fd = -1;
  // Host paths, opened by the setup child inside the new mount namespace (where binds must come from).
  std::string staging_dir;
  std::string upper_dir;
  std::string work_dir;
  std::string mount_point;  // relative to the new root, e.g. "workspace"
  std::string hostname;
};

// The directories the setup child opened (O_PATH) in the new mount namespace, used by PID 1.
struct OpenedDirs {
  int staging = -1;
  int upper = -1;
  int work = -1;
};

// The setup child's body: never returns.
[[noreturn]] void run_setup_child(const InitPlan& plan);

}  // namespace tnk::ns
