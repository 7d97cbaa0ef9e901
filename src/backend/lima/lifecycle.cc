#include "backend/lima/lifecycle.h"

#include <ctime>

#include "backend/lima/limactl.h"
#include "backend/lima/manifest_keys.h"
#include "core/files.h"
#include "core/strings.h"
#include "state/store.h"

namespace tnk::lima {
namespace {

constexpr std::chrono::minutes kCreateTimeout{2};
// The first start downloads the image (hundreds of MB) and boots it.
constexpr std::chrono::minutes kStartTimeout{20};
constexpr std::chrono::seconds kForceStopTimeout{30};
constexpr std::chrono::minutes kDeleteTimeout{2};

const std::string kLimaHint = "check it with `limactl list` and Lima's logs in its instance directory (~/.lima/<id>)";

Result<ProcessResult> run_step(lima::Limactl& limactl, const lima::Argv& argv, std::chrono::milliseconds timeout,
                               const Log& log) {
  // -v shows limactl's own progress as it happens; otherwise it is kept for the error message.
  if (log.verbosity() == Verbosity::kVerbose) return limactl.visible(argv, timeout);
  return limactl.capture(argv, timeout);
}

Status check_step(const Result<ProcessResult>& ran, const std::string& what, const std::string& id) {
  if (!ran) return ran.error().context(what + " " + id).with_hint(kLimaHint);
  if (ran->exit_code != 0) {
    return failed("`limactl " + what + "` of " + id + " failed (exit " + std::to_string(ran->exit_code) +
                      "): " + lima::tail_lines(ran->err, 8),
                  kLimaHint);
  }
  return ok_status();
}

Result<state::SandboxState> instance_state(lima::Limactl& limactl, const std::string& id) {
  TNK_ASSIGN_OR_RETURN(auto instances, lima::list_instances(limactl));
  return lima::sandbox_state(lima::find_instance(instances, id));
}

// Writes the YAML and runs `limactl create`. On failure nothing of it is left.
Status create_instance(Context& ctx, lima::Limactl& limactl, const sandbox::Resolved& r, const state::Store& store) {
  TNK_ASSIGN_OR_RETURN(auto spec, lima_instance_spec(ctx, r));
  TNK_ASSIGN_OR_RETURN(std::string yaml, lima::instance_yaml(spec));
  auto yaml_path = store.file(r.id, lima::kInstanceYamlFile);
  TNK_RETURN_IF_ERROR(make_dirs(store.dir(r.id)));
  TNK_RETURN_IF_ERROR(write_file_atomic(yaml_path, yaml));
  ctx.log.info("creating Lima instance " + r.id + " from " + yaml_path.string());
  Status created =
      check_step(run_step(limactl, lima::create_argv(r.id, yaml_path), kCreateTimeout, ctx.log), "create", r.id);
  if (!created.ok() && !r.record) (void)store.remove(r.id);
  return created;
}

// Undoes a first start that failed: the instance and the state directory go, so that the next
// start begins from nothing (Lima keeps the downloaded image in its cache).
void roll_back_creation(Context& ctx, lima::Limactl& limactl, const state::Store& store, const std::string& id) {
  auto removed = limactl.capture(lima::delete_argv(id, true), kDeleteTimeout);
  if (!removed || removed->exit_code != 0) {
    ctx.log.warn("could not remove the half-created Lima instance " + id + "; remove it with `limactl delete --force " +
                 id + "`");
  }
  (void)store.remove(id);
}

Status boot(Context& ctx, lima::Limactl& limactl, const sandbox::Resolved& r) {
  ctx.log.info("starting Lima instance " + r.id + " (the first start downloads the guest image)");
  TNK_RETURN_IF_ERROR(check_step(run_step(limactl, lima::start_argv(r.id), kStartTimeout, ctx.log), "start", r.id));
  TNK_ASSIGN_OR_RETURN(auto now, instance_state(limactl, r.id));
  if (now != state::SandboxState::kRunning) {
    return failed("Lima instance " + r.id + " is not running after `limactl start`", kLimaHint);
  }
  return ok_status();
}

}  // namespace

state::SandboxState LimaStates::state_of(const std::string& id) const {
  return lima::sandbox_state(lima::find_instance(instances, id));
}

LimaStates lima_states() {
  LimaStates states;
  auto limactl = lima::system_limactl();
  auto listed = lima::list_instances(*limactl);
  if (listed) {
    states.instances = std::move(*listed);
  } else {
    states.problem = listed.error().message;
  }
  return states;
}

Result<lima::InstanceSpec> lima_instance_spec(Context& ctx, const sandbox::Resolved& r) {
  TNK_ASSIGN_OR_RETURN(const Config* config, ctx.config());
  TNK_ASSIGN_OR_RETURN(auto options, lima::load_lima_options(r.manifest_file));
  lima::InstanceSpec spec;
  spec.id = r.id;
  spec.project_dir = r.project.dir;
  spec.mount_point = r.record ? r.record->mount_point : r.manifest.workspace_mount;
  spec.cpus = r.manifest.cpus.value_or(config->sandbox_cpus.value);
  spec.memory_bytes = r.manifest.memory_bytes.value_or(config->sandbox_memory_bytes.value);
  spec.disk_bytes = r.manifest.disk_bytes.value_or(config->sandbox_disk_bytes.value);
  spec.network = r.network;
  spec.port_forwards = r.manifest.ports;
  spec.containerd = options.containerd;
  spec.image = options.image;
  return spec;
}

Result<sandbox::StartOutcome> ensure_running_lima(Context& ctx, const sandbox::Resolved& r) {
  if (r.review) {
    return usage_error("review mode (" + r.review_source +
                           ") is not available on lima: its guest's root could "
                           "reach past any layer a mount inside it makes",
                       "use --backend ns or --backend vm, or start without review mode");
  }
  auto limactl = lima::system_limactl();
  state::Store store(ctx.paths.sandboxes_dir());
  TNK_ASSIGN_OR_RETURN(FileLock lock, store.lock(r.id, ctx.log));
  TNK_ASSIGN_OR_RETURN(auto existing, store.load(r.id));  // again: another tnk may have created it meanwhile
  TNK_ASSIGN_OR_RETURN(auto instances, lima::list_instances(*limactl));
  const lima::Instance* instance = lima::find_instance(instances, r.id);
  if (!existing && instance) {
    return failed("a Lima instance named " + r.id + " exists, but tnk did not create it",
                  "tnk will not take over an instance it has no record of; remove it with `limactl delete " + r.id +
                      "` (or rename it) and start again");
  }
  sandbox::StartOutcome outcome;
  if (existing && lima::sandbox_state(instance) == state::SandboxState::kRunning) {
    outcome.already_running = true;
    outcome.record = *existing;
    return outcome;
  }
  sandbox::Resolved target = r;
  target.record = existing;
  if (instance == nullptr) {
    if (existing) ctx.log.note("Lima has no instance " + r.id + " any more; creating it again");
    TNK_RETURN_IF_ERROR(create_instance(ctx, *limactl, target, store));
  }
  if (!r.manifest.readonly_paths.empty()) {
    ctx.log.note(
        "mounts.readonly is not enforced on lima (its guest's user has passwordless sudo, which undoes "
        "any read-only mount inside): " +
        join(r.manifest.readonly_paths) + " stay writable");
  }
  Status booted = boot(ctx, *limactl, target);
  if (!booted.ok()) {
    if (!existing) roll_back_creation(ctx, *limactl, store, r.id);
    return booted.error();
  }
  TNK_ASSIGN_OR_RETURN(auto spec, lima_instance_spec(ctx, target));
  outcome.record =
      existing ? *existing : sandbox::new_record(r, spec.image ? spec.image->location : lima::kBaseTemplate);
  outcome.created = !existing;
  outcome.record.started_at = std::time(nullptr);
  TNK_RETURN_IF_ERROR(store.save(outcome.record));
  return outcome;
}

Status stop_lima(const Paths& paths, const std::string& id, std::chrono::milliseconds grace, Log& log) {
  auto limactl = lima::system_limactl();
  TNK_ASSIGN_OR_RETURN(auto before, instance_state(*limactl, id));
  if (before != state::SandboxState::kRunning) return ok_status();
  auto graceful = limactl->capture(lima::stop_argv(id, false), grace + std::chrono::seconds(30));
  TNK_ASSIGN_OR_RETURN(auto after, instance_state(*limactl, id));
  if (after == state::SandboxState::kRunning) {
    std::string why = !graceful ? graceful.error().message : lima::tail_lines(graceful->err, 2);
    log.warn("graceful stop of Lima instance " + id + " did not finish (" + why + "); forcing it");
    (void)limactl->capture(lima::stop_argv(id, true), kForceStopTimeout);
    TNK_ASSIGN_OR_RETURN(after, instance_state(*limactl, id));
    if (after == state::SandboxState::kRunning) {
      return failed("failed to stop Lima instance " + id, "try `limactl stop --force " + id + "`");
    }
  }
  return state::Store(paths.sandboxes_dir()).mark_stopped(id, log);
}

Status delete_lima_instance(const std::string& id, Log& log) {
  auto limactl = lima::system_limactl();
  TNK_ASSIGN_OR_RETURN(auto instances, lima::list_instances(*limactl));
  if (lima::find_instance(instances, id) == nullptr) {
    log.verbose("Lima has no instance " + id + "; only tnk's state is removed");
    return ok_status();
  }
  return check_step(limactl->capture(lima::delete_argv(id, true), kDeleteTimeout), "delete", id);
}

}  // namespace tnk::lima
