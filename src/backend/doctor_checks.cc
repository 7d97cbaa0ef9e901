#include "backend/doctor_checks.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "backend/k8s/doctor_check.h"
#include "backend/k8s/k8s_backend.h"
#include "backend/lima/doctor_check.h"
#include "core/strings.h"
#include "host/linux_backends.h"
#include "image/apt_sources.h"
#include "image/recipe.h"
#include "image/store.h"
#if TNK_LINUX_BACKENDS
#include "backend/ns/host_support.h"
#include "backend/vm/doctor_checks.h"
#include "core/files.h"
#include "core/user_name.h"
#include "idmap/root_ranges.h"
#include "idmap/userns.h"
#endif

namespace tnk::backend {

using doctor::Outcome;

namespace {

#if TNK_LINUX_BACKENDS
// An ns probe as a check: the probes themselves say what they saw and what would fix it.
void add_ns_probe(doctor::Registry& registry, const char* id, const char* title, linux::ProbeResult (*probe)(),
                  doctor::Status when_missing) {
  registry.add({id, title, false, [probe, when_missing]() -> Outcome {
                  linux::ProbeResult result = probe();
                  return {result.ok ? doctor::Status::kOk : when_missing, result.detail, result.ok ? "" : result.fix};
                }});
}

// Root's sandboxes map onto root's own ranges, which a start reserves when there are none; sandboxes an
// older tnk made without them sit on 100000-165535, which /etc/subuid may give a user too (security
// review L5).
Outcome root_ids_outcome() {
  const idmap::RootRanges ranges = idmap::root_ranges();
  const std::string where = "uids " + idmap::range_text(ranges.uids) + ", gids " + idmap::range_text(ranges.gids);
  const std::string rootless = "; the normal way is rootless, tnk run by an ordinary user";
  if (ranges.reserved)
    return {doctor::Status::kOk, "running as root: sandboxes map to root's own range (" + where + ")" + rootless, ""};
  std::vector<std::string> owners;
  for (const char* file : {idmap::kSubuidFile, idmap::kSubgidFile}) {
    auto content = read_file(file);
    if (!content) continue;
    for (auto& owner : idmap::overlapping_owners(*content, file == idmap::kSubuidFile ? ranges.uids : ranges.gids)) {
      if (std::find(owners.begin(), owners.end(), owner) == owners.end()) owners.push_back(owner);
    }
  }
  const std::string shared = join(owners);
  const std::string fix = "`" + idmap::add_range_command("root") +
                          "` reserves a range of its own for root's sandboxes (the next start would too)";
  if (owners.empty()) {
    return {doctor::Status::kInfo,
            "running as root: no range of root's own yet (the next start reserves one); sandboxes an older tnk made "
            "map to " +
                where + ", reserved for no one" + rootless,
            fix};
  }
  return {doctor::Status::kWarn,
          "running as root: no range of root's own yet (the next start reserves one); sandboxes an older tnk made "
          "map to " +
              where + ", which /etc/subuid or /etc/subgid also gives to " + shared +
              ": their containers and sandboxes share those host ids",
          fix};
}

// An ordinary user's sandboxes map their root and system users onto its subordinate ranges.
Outcome subids_outcome() {
  if (::geteuid() == 0) return root_ids_outcome();
  auto ids = idmap::rootless_ids();
  if (!ids)
    return {doctor::Status::kFail, ids.error().message,
            "run `" + idmap::add_range_command(effective_user_name()) + "`"};
  return {doctor::Status::kOk,
          ids->name + ": uids " + idmap::range_text(ids->uids) + ", gids " + idmap::range_text(ids->gids), ""};
}

Outcome map_helpers_outcome() {
  std::string found;
  for (const char* helper : {"newuidmap", "newgidmap"}) {
    auto path = idmap::find_map_helper(helper);
    if (!path) {
      // Root writes its maps itself: only ordinary users need the helpers.
      return {::geteuid() == 0 ? doctor::Status::kInfo : doctor::Status::kFail, path.error().message,
              path.error().hint};
    }
    found += (found.empty() ? "" : ", ") + *path;
  }
  return {doctor::Status::kOk, found, ""};
}

Outcome idmapped_outcome() {
  if (::geteuid() != 0)
    return {doctor::Status::kInfo, "not used by a rootless sandbox (its lower layer is the user's)", ""};
  linux::ProbeResult result = ns::probe_idmapped_mounts();
  return {result.ok ? doctor::Status::kOk : doctor::Status::kWarn, result.detail, result.ok ? "" : result.fix};
}
#endif

Outcome image_outcome(const Paths& paths) {
  auto sources = image::read_apt_sources();
  if (!sources) return {doctor::Status::kWarn, sources.error().message, sources.error().hint};
  auto recipe = image::default_recipe(*sources);
  if (!recipe) return {doctor::Status::kWarn, recipe.error().message, recipe.error().hint};
  std::string id = image::image_id(*recipe);
  auto found = image::find_image(paths, id);
  if (found)
    return {doctor::Status::kOk, id + " is built (" + std::to_string(found->size_bytes / 1000000) + " MB)", ""};
  return {doctor::Status::kInfo, id + " is not built yet; the first `tnk sandbox start` builds it (about a minute)",
          "tnk image build"};
}

}  // namespace

void add_doctor_checks(doctor::Registry& registry, const host::HostFacts& facts, const Paths& paths) {
  registry.add({"backend_auto", "backend (auto)", false, [facts]() -> Outcome {
                  auto choice = host::choose_auto_backend(facts);
                  // The weaker-note is printed when a sandbox starts; here the reason is enough.
                  return {doctor::Status::kInfo, std::string(to_string(choice.backend)) + ": " + choice.why, ""};
                }});
  registry.add({"vm_accel", "vm backend acceleration", false, [facts]() -> Outcome {
                  auto accel = host::choose_vm_accel(facts);
                  doctor::Status status =
                      accel.accel == host::Accel::kKvm ? doctor::Status::kOk : doctor::Status::kInfo;
                  std::string fix;
                  if (accel.accel == host::Accel::kNone) fix = "run `sudo apt-get install qemu-system-x86`";
                  return {status, std::string(host::accel_name(accel.accel)) + ": " + accel.why, fix};
                }});
#if TNK_LINUX_BACKENDS
  std::error_code ec;  // tnk-agent and the kernel fragment are found next to the running binary
  vm::add_vm_doctor_checks(registry, facts, paths, std::filesystem::read_symlink("/proc/self/exe", ec));
#endif
#if TNK_LINUX_BACKENDS  // a build without them (macOS) has no ns checks
  add_ns_probe(registry, "ns_userns", "ns backend: user namespaces", linux::probe_user_namespaces,
               doctor::Status::kWarn);
  registry.add({"ns_subids", "ns backend: subordinate id ranges", false, subids_outcome});
  registry.add({"ns_map_helpers", "ns backend: newuidmap and newgidmap", false, map_helpers_outcome});
  add_ns_probe(registry, "ns_overlay", "ns backend: overlayfs in a user namespace", ns::probe_overlay_in_userns,
               doctor::Status::kWarn);
  registry.add({"ns_idmap", "ns backend: idmapped mounts", false, idmapped_outcome});
  add_ns_probe(registry, "ns_seccomp", "ns backend: seccomp", ns::probe_seccomp, doctor::Status::kWarn);
  // A warning when ns starts are refused for it (no place for the pids or memory limit), else a note.
  registry.add(
      {"ns_cgroups", "ns backend: resource limits (cgroups)", false, []() -> Outcome {
         linux::ProbeResult result = linux::probe_cgroup_delegation();
         if (result.ok) return {doctor::Status::kOk, result.detail, ""};
         return {result.refuses_start ? doctor::Status::kWarn : doctor::Status::kInfo, result.detail, result.fix};
       }});
#endif
  registry.add({"image", "sandbox image", false, [paths]() -> Outcome { return image_outcome(paths); }});
  lima::add_doctor_check(registry, facts);
}

Status add_cluster_checks(Context& ctx, doctor::Registry& registry, const std::string& backend) {
  if (backend != "k8s") {
    return usage_error("doctor --backend " + backend + ": only k8s has checks of its own (its cluster's)",
                       "`tnk doctor` checks this host for every other backend");
  }
  TNK_ASSIGN_OR_RETURN(const Config* config, ctx.config());
  k8s::add_k8s_doctor_checks(registry, k8s::cluster_of(*config, ctx.paths.home));
  return ok_status();
}

}  // namespace tnk::backend
