#include "backend/ns/host_support.h"

#include <sched.h>
#include <seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string_view>

#include "backend/ns/sandbox.h"
#include "backend/ns/seccomp.h"
#include "backend/ns/userns.h"
#include "confine/setid_filter.h"
#include "core/files.h"
#include "core/user_name.h"
#include "idmap/subordinate_ids.h"
#include "idmap/userns.h"
#include "linux/host_probes.h"
#include "linux/syscalls.h"

namespace tnk::ns {

namespace fs = std::filesystem;

namespace {

// A temporary directory, removed (with what a probe left in it) on destruction.
struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/tnk-probe-XXXXXX";
    if (mkdtemp(tmpl) != nullptr) path = tmpl;
    if (!path.empty()) chmod(path.c_str(), 0755);
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

Result<UniqueFd> sandbox_userns(HostIds ids) { return idmap::create_userns(root_run_maps(ids)); }

// Mounts an overlay in `dir` as the root of `userns`; the lower layer is `lower_tree` (an idmapped tree,
// as root makes) or, when it is -1, the plain directory (as a rootless sandbox has).
int overlay_child(int userns, int lower_tree, const fs::path& dir) {
  if (setns(userns, CLONE_NEWUSER) != 0 || unshare(CLONE_NEWNS) != 0) return errno;
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return errno;
  if (setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0) return errno;
  std::string lower = (dir / "lower").string();
  if (lower_tree >= 0 && move_mount(lower_tree, "", AT_FDCWD, lower.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0) {
    return errno;
  }
  std::string options = "lowerdir=" + lower + ",upperdir=" + (dir / "upper").string() +
                        ",workdir=" + (dir / "work").string() + ",userxattr";
  std::string merged = (dir / "merged").string();
  if (mount("overlay", merged.c_str(), "overlay", 0, options.c_str()) != 0) return errno;
  // overlayfs left work/work owned by this namespace's root, which an ordinary user cannot remove.
  umount2(merged.c_str(), MNT_DETACH);
  rmdir((dir / "work" / "work").c_str());
  return 0;
}

const char* const kOverlayFix =
    "the ns backend needs overlayfs in a user namespace (Linux >= 5.11; as root on an idmapped lower layer, "
    ">= 5.19); use the vm backend on this host";

// An ordinary user's variant: the namespace a rootless sandbox has (mapped through newuidmap onto the
// user's ranges), the user's own directories as layers.
ProbeResult probe_overlay_rootless() {
  auto ids = idmap::rootless_ids();
  if (!ids.ok())
    return {false, "not checked: " + ids.error().message,
            "run `" + idmap::add_range_command(effective_user_name()) + "`"};
  TempDir tmp;
  if (tmp.path.empty()) return {false, std::string("cannot create a temporary directory: ") + std::strerror(errno), ""};
  for (const char* sub : {"lower", "upper", "work", "merged"}) mkdir((tmp.path / sub).c_str(), 0755);
  auto userns = idmap::create_userns(idmap::sandbox_maps(*ids, idmap::kAgentId));
  if (!userns.ok()) return {false, userns.error().message, userns.error().hint};
  int userns_fd = userns->get();
  const fs::path& dir = tmp.path;
  int err = linux::in_forked_child([&] { return overlay_child(userns_fd, -1, dir); });
  if (err != 0) {
    return {false, std::string("mounting overlayfs in a user namespace fails: ") + std::strerror(err), kOverlayFix};
  }
  return {true, "overlayfs mounts in a user namespace mapped onto your subordinate ids (userxattr)", ""};
}

}  // namespace

ProbeResult probe_overlay_in_userns() {
  const std::string fix = kOverlayFix;
  if (geteuid() != 0) return probe_overlay_rootless();
  TempDir tmp;
  if (tmp.path.empty()) return {false, std::string("cannot create a temporary directory: ") + std::strerror(errno), ""};
  for (const char* sub : {"lower", "upper", "work", "merged"}) mkdir((tmp.path / sub).c_str(), 0755);
  const HostIds ids = root_ids_for_new_sandbox();
  if (chown((tmp.path / "upper").c_str(), ids.uid, ids.gid) != 0 ||
      chown((tmp.path / "work").c_str(), ids.uid, ids.gid) != 0) {
    return {false, std::string("preparing the probe: ") + std::strerror(errno), ""};
  }
  auto userns = sandbox_userns(ids);
  if (!userns.ok()) return {false, userns.error().message, fix};
  auto lower = detached_tree(tmp.path / "lower", MOUNT_ATTR_RDONLY, userns->get());
  if (!lower.ok()) return {false, lower.error().message, fix};
  int userns_fd = userns->get(), lower_fd = lower->get();
  const fs::path& dir = tmp.path;
  int err = linux::in_forked_child([&] { return overlay_child(userns_fd, lower_fd, dir); });
  if (err != 0) return {false, std::string("mounting overlayfs in a user namespace fails: ") + std::strerror(err), fix};
  return {true, "overlayfs mounts in a user namespace on an idmapped lower layer (userxattr)", ""};
}

ProbeResult probe_idmapped_mounts() {
  const std::string fix = "idmapped mounts need Linux >= 5.12 on ext4, xfs, btrfs or tmpfs (>= 6.3)";
  if (geteuid() != 0) return {false, "not checked: needs root", "run `sudo tnk doctor`"};
  TempDir tmp;
  if (tmp.path.empty()) return {false, std::string("cannot create a temporary directory: ") + std::strerror(errno), ""};
  auto userns = sandbox_userns(root_ids_for_new_sandbox());
  if (!userns.ok()) return {false, userns.error().message, fix};
  auto tree = detached_tree(tmp.path, 0, userns->get());
  if (!tree.ok()) return {false, tree.error().message, fix};
  return {true, "idmapped bind mounts work (tested on a directory in /tmp)", ""};
}

ProbeResult probe_seccomp() {
  auto filter = build_seccomp_filter();
  if (!filter.ok()) return {false, filter.error().message, "install libseccomp 2.5 or later"};
  const auto& prog = *filter;
  int err = linux::in_forked_child([&prog] {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
    return confine::load_seccomp_program(prog) == 0 ? 0 : errno;
  });
  const scmp_version* v = seccomp_version();
  std::string version = std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->micro);
  if (err != 0) {
    return {false, std::string("loading a seccomp filter fails: ") + std::strerror(err),
            "the kernel needs CONFIG_SECCOMP_FILTER"};
  }
  return {true, "seccomp filters load (libseccomp " + version + ", " + std::to_string(prog.size()) + " instructions)",
          ""};
}

std::vector<NamedProbe> probe_all() {
  return {{"user namespaces", linux::probe_user_namespaces()},
          {"overlayfs in a user namespace", probe_overlay_in_userns()},
          {"idmapped mounts", probe_idmapped_mounts()},
          {"seccomp", probe_seccomp()},
          {"cgroup v2 delegation", linux::probe_cgroup_delegation()}};
}

}  // namespace tnk::ns
