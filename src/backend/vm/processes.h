// The host processes of a vm sandbox, started by its supervisor as its own children: virtiofsd (the
// workspace) and QEMU (the guest), plus the two ways to end QEMU from outside (QMP `quit`, SIGKILL).
// The argv come from the pure builders in src/vm; this file is only the apply step.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "backend/vm/plan.h"
#include "backend/vm/virtiofsd_argv.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::vm {

// A listening unix stream socket at `path` (an old one is replaced), 0600.
Result<UniqueFd> listen_unix(const std::filesystem::path& path);

// A unix stream socket connected to `path` (O_CLOEXEC).
Result<UniqueFd> connect_unix(const std::filesystem::path& path);

// Starts virtiofsd for `plan` (built with listen_fd = 3): in the plan's user namespace, so that files
// keep the project owner's ownership and no guest uid is host root. The project directory is bound
// by host root at `plan_source` in a private mount namespace first, so that virtiofsd, which is nobody
// on the host, needs no access to the path above the project. `protected_paths` (project-relative) are
// read-only binds in that namespace (linux/protect_paths.h). Its output goes to `log`.
// Review mode (docs/workspace.md): the project is served through an overlay with these as its upper and
// work directories, mounted in virtiofsd's mount namespace where the bind would be.
struct ReviewDirs {
  std::filesystem::path upper, work;
};

// `cgroup_procs`: the sandbox's cgroups (linux::make_sandbox_cgroups), which the child joins first, both here
// and in start_qemu.
Result<pid_t> start_virtiofsd(const vm::VirtiofsdPlan& plan, const std::filesystem::path& project_dir,
                              const std::filesystem::path& plan_source, const std::vector<std::string>& protected_paths,
                              const std::optional<ReviewDirs>& review, int listen_fd, int log_fd,
                              const std::vector<int>& cgroup_procs);

// Run by root, what makes QEMU unprivileged (security review H1): it runs as `account`, with no
// capability (none permitted, an empty bounding set) and no supplementary group but /dev/kvm's
// (`kvm_gid`, under KVM), and finds `handed` ({the supervisor's fd, the number QEMU sees it at}) in
// place of the host paths its account cannot reach (vm::handed_fd).
struct UnprivilegedQemu {
  vm::QemuAccount account;
  std::optional<gid_t> kvm_gid;
  std::vector<std::pair<int, int>> handed;
};

// Starts QEMU with `argv` in a network namespace of its own (loopback only), with no_new_privs; output
// to `log_fd`. Rootless (`unprivileged` null and not root), in a user namespace of its own that maps
// only the user, so that it has no capability; run by root, as `unprivileged` says (required then). It
// dies with the supervisor (PDEATHSIG).
Result<pid_t> start_qemu(const std::vector<std::string>& argv, int log_fd, const UnprivilegedQemu* unprivileged,
                         const std::vector<int>& cgroup_procs);

// Waits up to `timeout` for the child `pid` to exit and reaps it; true when it did.
bool wait_child(pid_t pid, std::chrono::milliseconds timeout);

// QMP: capabilities, then `quit`. Best effort within `timeout`.
Status qmp_quit(const std::filesystem::path& socket, std::chrono::milliseconds timeout);
// QMP `stop` (held) or `cont`. QEMU stops the guest's CPUs and flushes its disks before it answers `stop`:
// a copy of the overlay meanwhile is crash-consistent (what sits in the guest's page cache is not in it).
Status qmp_pause(const std::filesystem::path& socket, bool held);

}  // namespace tnk::vm
