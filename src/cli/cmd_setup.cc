// tnk setup --user NAME: what root does once so that NAME can run sandboxes (host/setup_plan.h decides;
// this file gathers the host's facts and carries the steps out, printing each one as it is done).
#if TNK_LINUX_BACKENDS  // the ns backend's cgroups, user namespaces: Linux only
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>

#include "cli/command.h"
#include "config/size.h"
#include "core/file_lock.h"
#include "core/files.h"
#include "core/trusted_file.h"
#include "core/user_name.h"
#include "disk/client.h"
#include "disk/rules.h"
#include "host/root_reservation.h"
#include "host/setup_command.h"
#include "host/setup_plan.h"
#include "idmap/subordinate_ids.h"
#include "linux/cgroups.h"
#include "naming/naming.h"

namespace tnk::cli {
namespace {

namespace fs = std::filesystem;

std::string setup_file_text(const fs::path& path) {
  auto text = read_file(path);
  return text.ok() ? *text : "";
}

std::set<std::string> setup_words(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

bool user_in_group(const passwd& pw, const std::string& group) {
  const struct group* gr = ::getgrnam(group.c_str());
  if (gr == nullptr) return false;
  if (gr->gr_gid == pw.pw_gid) return true;
  for (char** member = gr->gr_mem; *member != nullptr; ++member) {
    if (pw.pw_name == std::string(*member)) return true;
  }
  return false;
}

// The cgroup mounts setup may delegate from: the v1 hierarchies of memory, pids and cpu, or (with none
// of them on v1) the cgroup2 mount.
Status add_setup_cgroup_facts(host::SetupFacts& f, const std::string& leaf) {
  TNK_ASSIGN_OR_RETURN(std::string mountinfo, read_file("/proc/self/mountinfo"));
  std::optional<fs::path> v2;
  for (const auto& m : linux::parse_cgroup_mounts(mountinfo)) {
    if (m.root != "/") continue;
    if (m.v2) v2 = m.mount_point;
    for (const auto& c : m.controllers) {
      if (c == "memory" || c == "pids" || c == "cpu") f.v1_mounts[c] = m.mount_point;
    }
  }
  // `sudo tnk setup --user alice` run by alice: sudo keeps her cgroups, which are this process's.
  const char* sudo_uid = std::getenv("SUDO_UID");
  const bool by_the_user = sudo_uid != nullptr && std::to_string(f.uid) == sudo_uid;
  std::map<std::string, std::string> callers;  // v1 controller -> the caller's cgroup in its hierarchy
  if (by_the_user) {
    TNK_ASSIGN_OR_RETURN(std::string own, read_file("/proc/self/cgroup"));
    for (const auto& m : linux::parse_proc_cgroup(own)) {
      for (const auto& c : m.controllers) callers[c] = m.path;
    }
  }
  std::vector<fs::path> dirs;
  for (const auto& [c, mount] : f.v1_mounts) {
    const std::string caller = callers.count(c) != 0 ? callers[c] : "";
    std::error_code ec;
    bool user_slice =
        f.systemd && fs::is_directory(mount / "user.slice" / ("user-" + std::to_string(f.uid) + ".slice"), ec);
    f.v1_bases[c] = host::v1_user_base(caller, f.uid, user_slice);
    dirs.push_back(host::v1_user_dir(f, c, leaf));
  }
  if (f.v1_mounts.empty() && v2) {
    f.v2_mount = *v2;
    f.v2_available = setup_words(setup_file_text(*v2 / "cgroup.controllers"));
    f.v2_enabled = setup_words(setup_file_text(*v2 / "cgroup.subtree_control"));
    dirs.push_back(*v2 / leaf);
  }
  for (const auto& dir : dirs) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0) f.owners[dir] = st.st_uid;
  }
  return ok_status();
}

void add_disk_facts(host::SetupFacts& f, std::optional<uint64_t> allowance) {
  f.disk_allowance = allowance;
  if (!allowance) return;
  f.disks_conf = setup_file_text(disk::kAllowanceFile);
  f.disk_helper = disk::helper_path();
  f.disk_helper_writer = non_root_writer(f.disk_helper);
  struct stat st {};
  f.disk_helper_setuid = ::stat(f.disk_helper.c_str(), &st) == 0 && st.st_uid == 0 && (st.st_mode & 07777) == 04755;
}

Result<host::SetupFacts> gather_setup_facts(const Context& ctx, const passwd& pw, std::optional<uint64_t> allowance) {
  host::SetupFacts f;
  f.user = pw.pw_name;
  f.uid = pw.pw_uid;
  f.gid = pw.pw_gid;
  f.subuid = setup_file_text(idmap::kSubuidFile);
  f.subgid = setup_file_text(idmap::kSubgidFile);
  std::error_code ec;
  f.kvm_device = fs::exists("/dev/kvm", ec);
  f.kvm_group = ::getgrnam("kvm") != nullptr;
  f.kvm_member = user_in_group(pw, "kvm");
  for (const auto& w : setup_words(setup_file_text("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"))) {
    f.apparmor_restrict = w;
  }
  // AppArmor 4's parser knows `userns,` (its abi/4.0); the module's switch says whether it is on.
  f.apparmor_mediates_userns = setup_file_text("/sys/module/apparmor/parameters/enabled").rfind('Y', 0) == 0 &&
                               fs::exists("/etc/apparmor.d/abi/4.0", ec);
  if (auto profile = read_file(host::kAppArmorProfile); profile.ok()) f.apparmor_profile = *profile;
  f.tnk_binary = ctx.self_exe;
  f.tnk_binary_writer = non_root_writer(f.tnk_binary);
  f.systemd = fs::is_directory("/run/systemd/system", ec);
  TNK_ASSIGN_OR_RETURN(std::string leaf, naming::user_cgroup_name(f.user));
  TNK_RETURN_IF_ERROR(add_setup_cgroup_facts(f, leaf));
  add_disk_facts(f, allowance);
  return f;
}

Status apply_setup_op(const host::SetupOp& op, const host::SetupFacts& f) {
  using Kind = host::SetupOp::Kind;
  switch (op.kind) {
    case Kind::kRun: return host::run_setup_command(op.argv);
    case Kind::kWriteFile: return write_file_atomic(op.path, op.content, 0644);
    case Kind::kMkdir:
      if (::mkdir(op.path.c_str(), 0755) != 0 && errno != EEXIST)
        return sys_error(errno, "creating " + op.path.string());
      return ok_status();
    case Kind::kChown:
      if (::chown(op.path.c_str(), f.uid, f.gid) != 0) {
        return sys_error(errno, "giving " + op.path.string() + " to " + f.user);
      }
      return ok_status();
    case Kind::kWriteKernel: return write_kernel_file(op.path, op.content);
  }
  return ok_status();
}

std::string setup_commands_text(const host::SetupStep& step) {
  std::string text;
  for (const auto& op : step.ops) text += "  " + host::op_text(op) + "\n";
  return text;
}

Result<int> run_setup(Context& ctx, const std::string& user, bool dry_run, const std::string& disk_allowance) {
  std::optional<uint64_t> allowance;
  if (!disk_allowance.empty()) {
    auto bytes = parse_size(disk_allowance);
    if (!bytes)
      return usage_error("--disk-allowance " + disk_allowance + ": " + bytes.error().message, "for example 64GiB");
    allowance = *bytes;
  }
  if (::geteuid() != 0) {
    return permission_denied("tnk setup changes /etc/subuid, groups and cgroups: it runs as root",
                             "sudo tnk setup --user " + effective_user_name());
  }
  const passwd* found = ::getpwnam(user.c_str());
  if (found == nullptr) return not_found("no user " + user, "create the user first (useradd " + user + ")");
  const passwd pw = *found;
  const bool for_root = pw.pw_uid == 0;
  // Root's ranges are also reserved by a start that finds none (host/root_reservation.h): one at a time.
  std::optional<FileLock> root_lock;
  if (for_root && !dry_run) {
    TNK_ASSIGN_OR_RETURN(root_lock, FileLock::acquire(host::kRootRangesLock, std::chrono::seconds(30)));
  }
  TNK_ASSIGN_OR_RETURN(host::SetupFacts facts, gather_setup_facts(ctx, pw, allowance));
  TNK_ASSIGN_OR_RETURN(std::vector<host::SetupStep> steps,
                       for_root ? host::plan_root_setup(facts) : host::plan_setup(facts));
  for (const auto& step : steps) {
    if (!dry_run) {
      for (const auto& op : step.ops) {
        Status applied = apply_setup_op(op, facts);
        if (!applied.ok()) return applied.error().context("tnk setup, step " + step.id);
      }
    }
    if (ctx.out.machine()) continue;
    if (step.ops.empty()) {
      ctx.out.raw(step.done + "\n");
    } else {
      ctx.out.raw((dry_run ? step.pending + "\n" + setup_commands_text(step) : step.done + "\n"));
    }
  }
  if (ctx.out.machine()) {
    ctx.out.document(host::setup_json(user, steps, dry_run), [](std::ostream&) {});
  } else if (!dry_run && for_root) {
    ctx.out.raw("root's sandboxes map to root's own range now (sandboxes made before keep the ids they have)\n");
  } else if (!dry_run) {
    ctx.out.raw(user + " can run sandboxes now (`tnk doctor` as " + user + " checks; a new group applies from the " +
                "next login)\n");
  }
  return kExitOk;
}

}  // namespace

void add_setup_command(CLI::App& root, CommandTable& table) {
  auto* cmd = root.add_subcommand("setup", "Prepare this host for a user's rootless sandboxes (as root)");
  describe(*cmd,
           "Run as root, once per user: gives the user subordinate uid and gid ranges when it has none, "
           "membership of the kvm group, an AppArmor profile for tnk where AppArmor restricts user "
           "namespaces, and a cgroup subtree of its own where systemd does not delegate one. With --user root, "
           "only a range of root's own, which the sandboxes root runs map onto (the first sandbox root starts "
           "without one reserves it too, rather than share 100000-165535 with the first user useradd made). "
           "Idempotent; -n prints what it would do and "
           "changes nothing.",
           "sudo tnk setup --user alice -n");
  auto user = std::make_shared<std::string>();
  auto dry_run = std::make_shared<bool>(false);
  auto disk_allowance = std::make_shared<std::string>();
  cmd->add_option("--user", *user, "The user who will run sandboxes")->required();
  cmd->add_flag("-n,--dry-run", *dry_run, "Print what would be done; change nothing");
  cmd->add_option("--disk-allowance", *disk_allowance,
                  "Give each of the user's new ns sandboxes a disk of its own resources.disk, so that a write "
                  "past it fails inside (ENOSPC), these disks taking at most SIZE in all (e.g. 64GiB); "
                  "makes tnk-disk set-user-id root")
      ->type_name("SIZE");
  table.add(
      cmd, [user, dry_run, disk_allowance](Context& ctx) { return run_setup(ctx, *user, *dry_run, *disk_allowance); },
      /*needs_paths=*/false);
}

}  // namespace tnk::cli
#endif
