// The checks before a start, each a refusal with the object, why and the fix: nothing of the start is
// made before they pass (lifecycle.cc, ensure_running).
#include "backend/supervised/start_checks.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "backend/vm/plan.h"
#include "core/files.h"
#include "idmap/userns.h"
#include "linux/cgroups.h"
#include "linux/host_probes.h"
#include "review/layer.h"
#include "session/control_client.h"
#include "state/layout.h"

namespace tnk::supervised {

using sandbox::Resolved;

// A policy asked for with --network must be the one the running sandbox has: it is fixed at start.
Status check_running_policy(const state::Store& store, const Resolved& r) {
  if (r.network_source != "--network") return ok_status();
  auto network =
      session::request_network(store.file(r.id, state::kControlSocket), session::network_op(false), kQueryTimeout);
  if (!network) return network.error().context("asking " + r.id + " for its network policy");
  std::string running = network->value("policy", "");
  if (running == to_string(r.network)) return ok_status();
  return usage_error(
      "sandbox " + r.id + " runs with network policy '" + running + "', not '" + to_string(r.network) + "'",
      "the policy is fixed when a sandbox starts: `tnk sandbox stop`, then start it with --network " +
          to_string(r.network));
}

// Review mode is fixed at start, like the network policy.
Status check_running_review(const state::Store& store, const Resolved& r) {
  std::error_code ec;
  if (!r.review || std::filesystem::exists(review::layer_in(store.dir(r.id)).baseline, ec)) return ok_status();
  return usage_error("sandbox " + r.id + " runs in direct mode: its writes go straight to the project",
                     "review mode is chosen when a sandbox starts: `tnk sandbox stop`, then `tnk sandbox start "
                     "--review`");
}

namespace {

// The sandbox's `agent` writes into the project as the project's owner: never as host root (a setuid
// copy of a shell would stay setuid on the host), and, run by an ordinary user, only as that user.
Status check_project_owner(const std::filesystem::path& project) {
  struct stat st {};
  if (::stat(project.c_str(), &st) != 0) return sys_error(errno, "checking the project " + project.string());
  const uid_t me = ::geteuid();
  if (st.st_uid == 0) {
    return permission_denied(
        "the project " + project.string() + " is owned by root: the sandbox's agent would write into it as host root",
        "give the project to an ordinary user (chown -R USER " + project.string() + ") and run tnk as that user");
  }
  if (me != 0 && st.st_uid != me) {
    return permission_denied("the project " + project.string() + " belongs to uid " + std::to_string(st.st_uid) +
                                 ", not to you (uid " + std::to_string(me) +
                                 "): the sandbox's agent writes into it as you",
                             "run tnk as the project's owner");
  }
  return ok_status();
}

// An ordinary user runs a sandbox in user namespaces mapped onto the user's subordinate range (the ns
// sandbox itself; the vm's virtiofsd, and QEMU's network namespace).
Status check_rootless(const host::HostFacts& facts) {
  if (!facts.userns_possible) {
    return permission_denied("this host does not let ordinary users create user namespaces (" + facts.userns_note +
                                 "), which a rootless sandbox is made of; nothing was run",
                             "run `tnk doctor` for the fix");
  }
  // The knobs can allow what a seccomp profile or an LSM still refuses: try it (a forked child, ~1 ms).
  if (linux::ProbeResult probe = linux::probe_user_namespaces(); !probe.ok) {
    return permission_denied(probe.detail + ": a rootless sandbox is made of user namespaces; nothing was run",
                             probe.fix);
  }
  if (auto ids = idmap::rootless_ids(); !ids) return ids.error();
  for (const char* helper : {"newuidmap", "newgidmap"}) {
    if (auto found = idmap::find_map_helper(helper); !found) {
      return permission_denied(found.error().message, found.error().hint);
    }
  }
  return ok_status();
}

}  // namespace

Status check_backend(BackendKind backend, const host::HostFacts& facts, const std::filesystem::path& project) {
  TNK_RETURN_IF_ERROR(check_project_owner(project));
  if (::geteuid() != 0) TNK_RETURN_IF_ERROR(check_rootless(facts));
  if (backend == BackendKind::kVm && (facts.qemu_path.empty() || facts.virtiofsd_path.empty())) {
    return not_found(std::string("the vm backend needs ") +
                         (facts.qemu_path.empty() ? "qemu-system-x86_64" : "virtiofsd") + ", which is not installed",
                     "install the Debian packages qemu-system-x86 and qemu-utils (scripts/install-deps.sh), "
                     "or use --backend ns");
  }
  return ok_status();
}

// Security review M5: an ns sandbox starts only with its pids limit and the memory limit its profile sets,
// a vm sandbox only with the pids limit of its host processes (its guest's memory is QEMU's -m), unless
// tnk.toml's allow_unlimited says otherwise. Checked in the cgroups the supervisor will inherit, before
// anything of the start is made (record, image, supervisor); the supervisor checks again what only
// creating the directories shows.
Status check_limits(Context& ctx, const Resolved& r) {
  if (r.backend != BackendKind::kNs && r.backend != BackendKind::kVm) return ok_status();
  TNK_ASSIGN_OR_RETURN(const Config* config, ctx.config());
  linux::Limits limits;
  if (r.backend == BackendKind::kVm) {
    limits = vm::host_limits();
  } else {
    limits.memory_bytes = r.manifest.memory_bytes;
    if (r.manifest.cpus) limits.cpus = static_cast<double>(*r.manifest.cpus);
  }
  return linux::check_limits_before_start(r.id, limits, config->allow_unlimited.value);
}

}  // namespace tnk::supervised
