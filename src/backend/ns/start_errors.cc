#include "backend/ns/start_errors.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "backend/ns/steps.h"

namespace tnk::ns {

namespace {

const char* const kTraversalHint =
    "every directory above it must be owned by root or searchable by all (o+x): the sandbox opens it "
    "after joining its user namespace";

// The protected path `index` names, for a message.
std::string nth(const std::vector<std::string>& paths, int32_t index, const std::string& below) {
  return index >= 0 && static_cast<size_t>(index) < paths.size() ? below + "/" + paths[static_cast<size_t>(index)]
                                                                 : below;
}

std::string step_action(Step step, int32_t value, const SandboxSpec& spec) {
  switch (step) {
    case Step::kJoinCgroup: return "moving the sandbox into its cgroups";
    case Step::kSetnsUser: return "joining the sandbox's user namespace";
    case Step::kUnshare: return "creating the sandbox's mount, pid, network, ipc, uts and cgroup namespaces";
    case Step::kPrivateMounts: return "making the sandbox's mounts private";
    case Step::kOpenStaging: return "opening the staging directory " + spec.staging_dir.string();
    case Step::kOpenUpper: return "opening the overlay upper directory " + spec.upper_dir.string();
    case Step::kOpenWork: return "opening the overlay work directory " + spec.work_dir.string();
    case Step::kOpenReviewLayer:
      return "opening the review layer " + spec.review_upper.string() + " (and " + spec.review_work.string() + ")";
    case Step::kSetIds: return "becoming root of the sandbox's user namespace";
    case Step::kCloneInit: return "creating the sandbox's PID 1";
    case Step::kInitSignals: return "setting up PID 1 (death signal, signal handlers)";
    case Step::kStagingTmpfs:
    case Step::kAttachStaging: return "mounting a private tmpfs on the staging directory " + spec.staging_dir.string();
    case Step::kAttachLower: return "attaching the idmapped image tree " + spec.image_root.string();
    case Step::kMountOverlay: return "mounting the overlay root of " + spec.upper_dir.string();
    case Step::kOpenRoot: return "opening the overlay root";
    case Step::kMountDev: return "mounting /dev in the sandbox";
    case Step::kDevNode: return "binding the host's /dev/null, zero, full, random, urandom and tty into the sandbox";
    case Step::kMountDevpts: return "mounting /dev/pts in the sandbox";
    case Step::kMountShm: return "mounting /dev/shm in the sandbox";
    case Step::kMountProc: return "mounting /proc in the sandbox";
    case Step::kMountTmp: return "mounting /tmp in the sandbox";
    case Step::kMountRun: return "mounting /run in the sandbox";
    case Step::kBindHosts: return "binding the generated /etc/hosts from " + spec.runtime_dir.string();
    case Step::kBindResolv: return "binding the generated /etc/resolv.conf from " + spec.runtime_dir.string();
    case Step::kMountProject:
      return "mounting the project " + spec.project_dir.string() + " at " + spec.mount_point + " in the sandbox";
    case Step::kMountReviewOverlay:
      return "mounting the project " + spec.project_dir.string() + " under its review layer " +
             spec.review_upper.string();
    case Step::kProtectPath:
      return "making " + nth(spec.protected_paths, value, spec.project_dir.string()) + " read-only in the sandbox";
    case Step::kMountGitDir: return "sharing the linked worktree's git dir " + spec.git_common_dir.string();
    case Step::kProtectGitPath:
      return "making " + nth(spec.git_protected_paths, value, spec.git_common_dir.string()) +
             " read-only in the sandbox";
    case Step::kSetHostname: return "setting the sandbox's hostname to " + spec.hostname;
    case Step::kPivotRoot: return "switching to the sandbox's root (pivot_root)";
    case Step::kLoopback: return "bringing up the sandbox's loopback interface";
    case Step::kInitStdio: return "pointing PID 1's stdio at /dev/null";
    default: return "setting up the sandbox (step " + std::to_string(static_cast<int>(step)) + ")";
  }
}

std::string step_hint(Step step, int err) {
  switch (step) {
    case Step::kOpenStaging:
    case Step::kOpenUpper:
    case Step::kOpenWork: return err == EACCES ? kTraversalHint : "";
    case Step::kMountOverlay:
      return "overlayfs must work inside a user namespace on an idmapped lower layer (Linux >= 5.19), and the "
             "upper and work directories must be on a filesystem with user xattrs (ext4, xfs, btrfs); run "
             "`tnk doctor`";
    case Step::kMountReviewOverlay:
      return "review mode needs overlayfs over the project inside a user namespace (Linux >= 5.19 run as root, "
             "on an idmapped lower) and user xattrs where the state directory is; start without --review, or "
             "run `tnk doctor`";
    case Step::kAttachLower: return "idmapped mounts need Linux >= 5.12; run `tnk doctor`";
    case Step::kMountProject:
      return "the project and every mount below it are bound into the sandbox (run by root: idmapped, which "
             "needs Linux >= 5.12 and file systems that support it); run `tnk doctor`";
    case Step::kProtectPath:
    case Step::kProtectGitPath:
      return "it was a file or directory when the sandbox started; a symbolic link is never followed (run "
             "`tnk sandbox start` again)";
    case Step::kUnshare:
    case Step::kSetnsUser: return "user namespaces may be restricted on this host; run `tnk doctor`";
    case Step::kJoinCgroup: return "remove the sandbox's cgroup limits or run `tnk doctor`";
    default: return "";
  }
}

bool is_record(Step step) {
  return step == Step::kInitPid || step == Step::kReady || step == Step::kNoteSysfs || step == Step::kSessionPid;
}

}  // namespace

Status validate_cgroup_name(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 64 && name != "." && name != "..";
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                c == '.');
  }
  if (!ok) return usage_error("invalid cgroup name \"" + name + "\": use 1-64 letters, digits, '-', '_' or '.'");
  return ok_status();
}

Status validate_mount_point(const std::string& mount_point) {
  std::filesystem::path p(mount_point);
  bool normal = p.is_absolute() && p.lexically_normal().string() == mount_point && mount_point.size() > 1 &&
                mount_point.back() != '/';
  for (const auto& part : p) normal = normal && part != "." && part != "..";
  if (!normal) {
    return usage_error("invalid mount point \"" + mount_point +
                       "\": it must be an absolute, normalized path "
                       "other than /, e.g. /workspace");
  }
  for (const char* reserved : {"/proc", "/dev", "/sys"}) {
    std::string r = reserved;
    if (mount_point == r || mount_point.rfind(r + "/", 0) == 0) {
      return usage_error("invalid mount point \"" + mount_point + "\": " + r + " belongs to the kernel's filesystems");
    }
  }
  return ok_status();
}

Status validate_spec(const SandboxSpec& spec) {
  if (geteuid() == 0 && spec.rootless) return usage_error("a rootless sandbox is started by its user, not by root");
  if (geteuid() != 0 && !spec.rootless) {
    return permission_denied("a sandbox without a subordinate id range can only be started by root");
  }
  for (const auto* path :
       {&spec.image_root, &spec.upper_dir, &spec.work_dir, &spec.staging_dir, &spec.project_dir, &spec.runtime_dir}) {
    if (!path->is_absolute()) return usage_error("sandbox paths must be absolute: " + path->string());
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(spec.image_root, ec)) {
    return not_found("the image tree " + spec.image_root.string() + " does not exist", "build or pull the image first");
  }
  if (!std::filesystem::is_directory(spec.runtime_dir, ec)) {
    return not_found("the runtime directory " + spec.runtime_dir.string() + " does not exist");
  }
  TNK_RETURN_IF_ERROR(validate_mount_point(spec.mount_point));
  TNK_RETURN_IF_ERROR(validate_cgroup_name(spec.cgroup_name));
  if (spec.hostname.empty() || spec.hostname.size() > 64) {
    return usage_error("invalid sandbox hostname \"" + spec.hostname + "\": 1 to 64 characters");
  }
  if (spec.limits.cpus && !(*spec.limits.cpus > 0)) return usage_error("the cpu limit must be positive");
  if (spec.limits.pids == 0) return usage_error("the pids limit must be positive");
  return ok_status();
}

Error start_step_error(Step step, int err, int32_t value, const SandboxSpec& spec) {
  return sys_error(err, step_action(step, value, spec), step_hint(step, err));
}

StartOutcome interpret_start_reports(const std::vector<linux::sys::Report>& reports, const SandboxSpec& spec) {
  StartOutcome outcome;
  for (const auto& r : reports) {
    auto step = static_cast<Step>(r.step);
    if (step == Step::kInitPid) {
      outcome.init_pid = r.value;
    } else if (step == Step::kReady) {
      outcome.ready = true;
    } else if (step == Step::kNoteSysfs) {
      outcome.notes.push_back(std::string("/sys is not mounted in the sandbox: ") + std::strerror(r.err));
    } else if (!is_record(step) && outcome.error.message.empty()) {
      outcome.error = start_step_error(step, r.err, r.value, spec);
    }
  }
  return outcome;
}

}  // namespace tnk::ns
