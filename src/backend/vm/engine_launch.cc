// The vm engine's launch helpers: what a start reads from the host for the plan, the disk overlay, review
// mode's layer, the console's drain and QEMU's process with the namespaces the relays need.
#include "backend/vm/engine_launch.h"

#include <fcntl.h>
#include <pty.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>

#include "backend/vm/boot/disk.h"
#include "backend/vm/handed_files.h"
#include "backend/vm/host_kvm.h"
#include "core/capped_log.h"
#include "core/files.h"
#include "core/unix_address.h"
#include "idmap/root_ranges.h"
#include "idmap/userns.h"
#include "review/layer.h"
#include "state/layout.h"
#include "supervisor/launch.h"

namespace tnk::vm {

Result<UniqueFd> open_log(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return sys_error(errno, "opening " + path.string());
  return fd;
}

Result<HostPty> open_host_pty(unsigned short rows, unsigned short cols) {
  int master = -1, slave = -1;
  winsize ws{};
  ws.ws_row = rows;
  ws.ws_col = cols;
  if (::openpty(&master, &slave, nullptr, nullptr, &ws) != 0) return sys_error(errno, "openpty");
  HostPty pty{UniqueFd(master), UniqueFd(slave)};
  ::fcntl(master, F_SETFD, FD_CLOEXEC);
  ::fcntl(slave, F_SETFD, FD_CLOEXEC);
  termios mode{};
  if (::tcgetattr(slave, &mode) == 0) {
    ::cfmakeraw(&mode);
    ::tcsetattr(slave, TCSANOW, &mode);
  }
  return pty;
}

// What the plan needs from the host: the project owner's ids and, under TCG, the TSC frequency.
Result<vm::VmHostFacts> vm_host_facts(const supervisor::SupervisorConfig& config) {
  struct stat st {};
  if (::stat(config.project_dir.c_str(), &st) != 0) return sys_error(errno, "stat " + config.project_dir.string());
  vm::VmHostFacts facts;
  facts.project_uid = st.st_uid;
  facts.project_gid = st.st_gid;
  const vm::VmFiles files = vm::vm_files(config.state_dir);
  std::error_code ec;
  facts.init_on_overlay =
      std::filesystem::exists(files.disk, ec) && !std::filesystem::exists(files.boots_from_base, ec);
  if (::geteuid() != 0) {
    TNK_ASSIGN_OR_RETURN(idmap::RootlessIds ids, idmap::rootless_ids());
    // newgidmap maps no group of the user's but their own: a project in another group's directory (a
    // team's setgid one) is served with the user's group, as the ns backend does.
    facts.project_gid = ids.gid;
    facts.uid_range = ids.uids;
    facts.gid_range = ids.gids;
  } else {
    const idmap::RootRanges ranges = idmap::root_ranges();
    facts.uid_range = ranges.uids;
    facts.gid_range = ranges.gids;
    facts.run_by_root = true;
  }
  if (!config.vm_kvm) facts.tsc_khz = vm::host_tsc_khz().value_or(0);
  return facts;
}

// The overlay is made once and kept across restarts: it holds what the sandbox installed.
Status ensure_overlay(const supervisor::SupervisorConfig& config, const vm::VmPlan& plan,
                      std::vector<std::string>& notes) {
  std::error_code ec;
  if (plan.qemu.boot_disk.empty()) {  // vm::VmHostFacts::init_on_overlay
    notes.push_back(
        "this sandbox was made by an older tnk: its guest runs the init on its own disk, which guest "
        "root can replace (security review 3, R3-H2); delete it and start it again to boot from the "
        "read-only base disk");
  }
  if (std::filesystem::exists(plan.files.disk, ec)) return ok_status();
  TNK_RETURN_IF_ERROR(
      vm::boot::create_overlay(config.vm_base_disk, plan.files.base_disk_link, plan.files.disk, plan.disk_bytes));
  return write_file_atomic(plan.files.boots_from_base, "", 0644);
}

// Review mode: virtiofsd's map shows the project's owner as `agent`, so the layer's top is the owner's
// (review/layer.h); overlayfs is mounted by host root, or rootless by the user, who own the work dir.
Result<std::optional<ReviewDirs>> review_dirs(const supervisor::SupervisorConfig& config) {
  if (!config.review) return std::optional<ReviewDirs>();
  ReviewDirs dirs{config.state_dir / state::kReviewUpperDir, config.state_dir / state::kReviewWorkDir};
  struct stat project {};
  if (::stat(config.project_dir.c_str(), &project) != 0) {
    return sys_error(errno, "checking the project " + config.project_dir.string());
  }
  std::optional<review::Owner> owner;
  if (::geteuid() == 0) owner = review::Owner{project.st_uid, project.st_gid};
  TNK_RETURN_IF_ERROR(review::prepare_layer_top(dirs.upper, config.project_dir, owner));
  TNK_RETURN_IF_ERROR(make_dirs(dirs.work, 0700));
  return std::optional<ReviewDirs>(dirs);
}

// The guest's console: QEMU connects to the socket as it starts, and a thread copies what it writes into
// serial.log, capped and rotated (security review M5: guest root could write /dev/ttyS0 without end).
Result<std::unique_ptr<LogDrain>> drain_console(const vm::VmFiles& files) {
  TNK_ASSIGN_OR_RETURN(UniqueFd listener, listen_unix(files.serial_socket));
  TNK_ASSIGN_OR_RETURN(CappedLog log, CappedLog::open(files.serial_log, kLogCapBytes, true));
  return LogDrain::accept_one(std::move(listener), std::move(log));
}

Status launch_qemu(const vm::VmPlan& plan, const std::vector<int>& cgroup_procs, LaunchedQemu& out) {
  std::error_code ec;
  std::filesystem::remove(plan.files.agent_socket, ec);  // QEMU creates these (run by root: handed)
  std::filesystem::remove(plan.files.qmp_socket, ec);
  std::filesystem::remove(plan.files.qmp_events_socket, ec);
  TNK_ASSIGN_OR_RETURN(out.console, drain_console(plan.files));
  TNK_ASSIGN_OR_RETURN(UniqueFd log, open_log(plan.files.qemu_log));
  // Run by root: QEMU's files as descriptors, ours closed once QEMU has its copies.
  std::optional<UnprivilegedQemu> unprivileged;
  std::vector<UniqueFd> handed;
  if (plan.qemu_account) {
    unprivileged = UnprivilegedQemu{*plan.qemu_account, kvm_group(plan.qemu.kvm), {}};
    TNK_ASSIGN_OR_RETURN(handed, open_handed_files(plan, unprivileged->handed));
  }
  TNK_ASSIGN_OR_RETURN(out.pid,
                       start_qemu(plan.qemu_argv, log.get(), unprivileged ? &*unprivileged : nullptr, cgroup_procs));
  handed.clear();
  for (auto [name, fd] : {std::pair{"net", &out.netns}, std::pair{"user", &out.userns}}) {
    std::string path = "/proc/" + std::to_string(out.pid) + "/ns/" + name;
    fd->reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd->valid()) return sys_error(errno, "opening " + path);
  }
  return ok_status();
}

Result<pid_t> launch_virtiofsd(const vm::VirtiofsdPlan& plan, const vm::VirtiofsdConfig& config,
                               const std::filesystem::path& dir, const std::vector<std::string>& protected_paths,
                               const std::optional<ReviewDirs>& review, const std::filesystem::path& log_file,
                               const std::vector<int>& cgroup_procs) {
  TNK_ASSIGN_OR_RETURN(UniqueFd listener, listen_unix(config.socket));
  TNK_ASSIGN_OR_RETURN(UniqueFd log, open_log(log_file));
  return start_virtiofsd(plan, dir, config.source, protected_paths, review, listener.get(), log.get(), cgroup_procs);
}

}  // namespace tnk::vm
