#include "backend/supervised/lifecycle.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <optional>
#include <thread>

#include "backend/ns/sandbox.h"
#include "backend/supervised/start_checks.h"
#include "backend/supervised/supervisor_plan.h"
#include "backend/vm/boot/boot_files.h"
#include "backend/vm/plan.h"
#include "config/api_key.h"
#include "config/route_source.h"
#include "core/files.h"
#include "core/phase_timer.h"
#include "disk/client.h"
#include "host/host_probe.h"
#include "host/root_reservation.h"
#include "idmap/userns.h"
#include "image/apt_sources.h"
#include "image/recipe.h"
#include "image/store.h"
#include "review/layer.h"
#include "sandbox/live_rules.h"
#include "sandbox/registries.h"
#include "session/control_client.h"
#include "state/layout.h"
#include "state/liveness.h"
#include "state/own_disk.h"
#include "state/store.h"
#include "supervisor/launch.h"

namespace tnk::supervised {
namespace {

using sandbox::Resolved;
using sandbox::StartOutcome;

constexpr std::chrono::seconds kReadyTimeout{30};
constexpr std::chrono::seconds kVmReadyTimeout{180};  // a TCG guest on a loaded machine boots slowly

Result<image::ImageInfo> image_for_new_sandbox(Context& ctx) {
  TNK_ASSIGN_OR_RETURN(auto sources, image::read_apt_sources());
  TNK_ASSIGN_OR_RETURN(auto recipe, image::default_recipe(sources));
  return image::ensure_image(ctx.paths, recipe, ctx.log);
}

// The image an existing sandbox was made from. One that is gone or unusable (the cache was deleted, even
// during this sandbox's first start) is built again when it is the current recipe's: the same name is the
// same recipe. An older recipe's cannot be.
Result<image::ImageInfo> image_of(Context& ctx, const state::SandboxRecord& record) {
  auto found = image::find_image(ctx.paths, record.image_id);
  if (!found) {
    auto sources = image::read_apt_sources();
    auto recipe = sources ? image::default_recipe(*sources) : Result<image::Recipe>(sources.error());
    if (recipe && image::image_id(*recipe) == record.image_id) {
      ctx.log.note("the image " + record.image_id + " of " + record.id + " is not usable (" + found.error().message +
                   "): building it again");
      return image::ensure_image(ctx.paths, *recipe, ctx.log);
    }
    return found.error().with_hint("its image " + record.image_id + " is gone; `tnk sandbox delete` the sandbox " +
                                   "to recreate it on the current image (its installed packages are lost)");
  }
  return found;
}

// What the inference gateway adds: tnk.toml's [inference] and the profile's token variables. The key is
// read here, when the sandbox starts, and goes nowhere but onto the supervisor's config pipe.
Result<supervisor::InferenceGateway> inference_gateway(Context& ctx, const Resolved& r) {
  supervisor::InferenceGateway gateway;
  if (r.network == NetworkPolicy::kNone) return gateway;  // no endpoint: no key to hand anyone
  TNK_ASSIGN_OR_RETURN(const Config* config, ctx.config());
  TNK_ASSIGN_OR_RETURN(gateway.api_key, read_api_key(*config, ctx.env, ctx.paths.home));
  gateway.aliases = config->inference_aliases.value;
  gateway.concurrency = config->inference_concurrency.value;
  gateway.request_limit = config->inference_request_limit.value;
  gateway.answer_limit = config->inference_answer_limit.value;
  gateway.token_env = r.agent.token_env;
  return gateway;
}

// The vm backend's boot files (kernel built once per machine, the image's base disk) and accelerator.
// What a start builds once and shares with other sandboxes: the image, and for a vm its kernel and base
// disk. Minutes the first time, each under a lock of its own that waits as long as a build may take.
struct BootImages {
  image::ImageInfo image;
  std::optional<vm::boot::VmBootFiles> vm;
};

// For `record`'s sandbox, or a new one on `backend` when there is no record.
Result<BootImages> boot_images(Context& ctx, const std::optional<state::SandboxRecord>& record, BackendKind backend) {
  BootImages made;
  TNK_ASSIGN_OR_RETURN(made.image, record ? image_of(ctx, *record) : image_for_new_sandbox(ctx));
  if ((record ? record->backend : backend) == BackendKind::kVm) {
    TNK_ASSIGN_OR_RETURN(made.vm, vm::boot::ensure_vm_boot_files(ctx.paths, made.image, ctx.self_exe, ctx.log));
  }
  return made;
}

// Whether `made` is what `record`'s sandbox (or a new one on `backend`) boots from.
bool boot_images_fit(const BootImages& made, const std::optional<state::SandboxRecord>& record, BackendKind backend) {
  if (record && record->image_id != made.image.id) return false;
  return made.vm.has_value() == ((record ? record->backend : backend) == BackendKind::kVm);
}

// Review mode when asked (--review, the manifest), and whenever the layer holds changes: a start never
// hides them by showing the sandbox the project without its layer.
bool wants_review(const Resolved& r, const std::filesystem::path& state_dir) {
  return r.review || review::layer_in_use(review::layer_in(state_dir));
}

// The layer of a review start is made on first use; an empty one of an earlier review start goes.
Status prepare_review(Context& ctx, const Resolved& r, const supervisor::SupervisorConfig& config) {
  review::Layer layer = review::layer_in(config.state_dir);
  if (!config.review) {
    std::error_code ec;
    std::filesystem::remove(layer.baseline, ec);
    std::filesystem::remove_all(layer.dir, ec);  // nothing is lost: it held no changes
    return ok_status();
  }
  if (!r.review) {
    ctx.log.note("starting " + r.id +
                 " in review mode: its review layer holds changes (`tnk sandbox diff`, then "
                 "apply or discard them)");
  }
  return review::ensure_layer(layer, config.project_dir);
}

// An ns sandbox's disk of its own (state/own_disk.h): one without layers yet gets it when setup gave this
// user an allowance (else the watch alone bounds it); one that has it is mounted. Not for a vm.
Status prepare_own_disk(const supervisor::SupervisorConfig& config, BackendKind backend) {
  if (backend != BackendKind::kNs || !config.disk_bytes) return ok_status();
  const state::NsLayers layers = state::ns_layers(config.state_dir);
  std::error_code ec;
  if (!state::has_own_disk(config.state_dir) && !std::filesystem::exists(layers.upper, ec) && disk::available()) {
    return state::make_own_disk(config.state_dir, *config.disk_bytes);
  }
  return state::mount_own_disk(config.state_dir, *config.disk_bytes);
}

// Waits until `pid` has exited (pidfd: it is not our child).
void wait_for_exit(pid_t pid, std::chrono::milliseconds timeout) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return;
  pollfd p{fd, POLLIN, 0};
  ::poll(&p, 1, static_cast<int>(timeout.count()));
  ::close(fd);
}

}  // namespace

void clean_after_crash(const Paths& paths, const std::string& id) {
  state::Store store(paths.sandboxes_dir());
  std::error_code ec;
  for (const char* name : {state::kSupervisorPidFile, state::kControlSocket, state::kFailureFile}) {
    std::filesystem::remove(store.file(id, name), ec);
  }
  // ... and every other socket of its directory (QEMU's, virtiofsd's, the forwards'), which a supervisor
  // removes when it stops but not when it is killed: nothing listens on them now.
  for (const auto& entry : std::filesystem::directory_iterator(store.dir(id), ec)) {
    if (entry.is_socket(ec)) std::filesystem::remove(entry.path(), ec);
  }
  (void)ns::remove_cgroups(id);
}

namespace {

// How long a start waits for a supervisor that is alive but does not answer a ping: one whose pid file
// names it is ending (a stop whose command was killed goes on without it; found by the fault injector,
// vm: a `stop` killed at 5% of its run), or running but slow to answer, and is taken for running after
// this. One that no pid file names yet is given what its own start would have waited for its "ready".
constexpr std::chrono::seconds kEndingWait{40};

std::chrono::seconds ready_timeout(BackendKind backend) {
  return backend == BackendKind::kVm ? kVmReadyTimeout : kReadyTimeout;
}

// The state of an existing sandbox, under its lock, once its supervisor has settled. No other start
// launches a supervisor meanwhile, but one may be alive that its pid file does not name: launched by a
// start that gave up waiting for its "ready" (or was killed), or ending, its pid file removed before its
// engine has stopped. It holds supervisor.lock all its life: a start waits until it answers (running)
// or has ended (stopped or broken, and started again), and never launches a second one beside it.
Result<state::SandboxState> settled_state(Context& ctx, const state::Store& store, const state::SandboxRecord& record) {
  const auto began = std::chrono::steady_clock::now();
  bool was_recorded = false, told = false;
  for (;;) {
    bool recorded = !state::live_sandbox_pids(store, record.id).empty();
    // A slow answer is still an answer: the supervisor runs.
    if (recorded && session::ping(store.file(record.id, state::kControlSocket), kQueryTimeout).ok()) {
      return state::SandboxState::kRunning;
    }
    TNK_ASSIGN_OR_RETURN(bool alive, state::supervisor_alive(store, record.id));
    if (!recorded && !alive) {
      if (was_recorded) ctx.log.note("sandbox " + record.id + " was stopping; starting it again");
      return state::observe(store, record.id);
    }
    was_recorded = was_recorded || recorded;
    auto waited = std::chrono::steady_clock::now() - began;
    if (recorded && waited >= kEndingWait) return state::SandboxState::kRunning;
    if (!recorded && waited >= ready_timeout(record.backend)) {
      return failed("the supervisor of sandbox " + record.id + " is alive but has not reported ready",
                    "it is starting or stopping: run the command again when it has (its log is " +
                        store.file(record.id, state::kSupervisorLog).string() + ")");
    }
    if (!told) ctx.log.info("waiting for the supervisor of " + record.id + ", which is starting or stopping");
    told = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

namespace {

// The sandbox runs: its policy and review mode must be what this command asks for.
Result<StartOutcome> running(const state::Store& store, const Resolved& r, const state::SandboxRecord& record) {
  StartOutcome outcome;
  outcome.already_running = true;
  outcome.record = record;
  TNK_RETURN_IF_ERROR(check_running_policy(store, r));
  TNK_RETURN_IF_ERROR(check_running_review(store, r));
  return outcome;
}

// The sandbox is broken (its supervisor died): what the last one said, and what it left behind cleaned.
void recover_broken(Context& ctx, const state::Store& store, const std::string& id) {
  auto why = read_file(store.file(id, state::kFailureFile));
  std::string reason = why && !why->empty() ? why->substr(0, why->find('\n')) : "its supervisor had died";
  ctx.log.note("sandbox " + id + " was broken (" + reason + "); restarting it with its files intact");
  clean_after_crash(ctx.paths, id);
}

// What a start of a sandbox that does not run is given: made before its lock, or read under it.
struct StartInputs {
  host::HostFacts facts;
  std::optional<state::SandboxRecord> existing;  // none: a fresh sandbox, created here
  BootImages images;
  supervisor::InferenceGateway gateway;
};

// What plan_supervisor takes from the host, read now: the routes' credentials, the registries behind
// network.allow (the host's npm), whether the review layer holds changes, the vm's accelerator.
Result<SupervisorInputs> read_supervisor_inputs(Context& ctx, const Resolved& r, const state::SandboxRecord& record,
                                                StartInputs& in, const std::filesystem::path& audit_log) {
  SupervisorInputs out;
  out.state_dir = state::Store(ctx.paths.sandboxes_dir()).dir(r.id);
  out.image_root = in.images.image.rootfs;
  out.audit_log = audit_log;
  out.gateway = std::move(in.gateway);
  if (r.network != NetworkPolicy::kNone) {
    TNK_ASSIGN_OR_RETURN(const Config* loaded, ctx.config());
    TNK_ASSIGN_OR_RETURN(out.routes, resolve_routes(*loaded, ctx.env, ctx.paths.home));
    if (!loaded->ssh_routes.empty()) out.ssh_agent = ctx.env.get_nonempty("SSH_AUTH_SOCK").value_or("");
  }
  if (r.network == NetworkPolicy::kAllowlist) {
    auto allow = sandbox::expand_registries(r.manifest.allow_domains);
    if (!allow) return allow.error().context("network.allow of " + r.manifest.source.string());
    out.allow = *allow;
  }
  TNK_ASSIGN_OR_RETURN(out.live_rules, sandbox::load_live_rules(out.state_dir));
  out.review = wants_review(r, out.state_dir);
  if (record.backend == BackendKind::kVm) {
    out.vm = VmBoot{in.images.vm->kernel.vmlinux, in.images.vm->disk.base,
                    host::choose_vm_accel(in.facts).accel == host::Accel::kKvm};
  }
  return out;
}

// Creates the record of a fresh sandbox, then starts the supervisor and waits for it to be ready.
Result<StartOutcome> start_supervisor(Context& ctx, const Resolved& r, state::Store& store, StartInputs in,
                                      const std::filesystem::path& audit_log) {
  StartOutcome outcome;
  const image::ImageInfo& image = in.images.image;
  // Run by root without ranges of its own, the sandbox would map onto a user's: reserved first (L5).
  if (::geteuid() == 0) {
    TNK_ASSIGN_OR_RETURN(std::string reserved, host::reserve_root_ranges());
    if (!reserved.empty()) ctx.log.note(reserved);
  }
  if (in.existing) {
    outcome.record = *in.existing;
  } else {
    outcome.record = sandbox::new_record(r, image.id);
    outcome.created = true;
    TNK_RETURN_IF_ERROR(store.save(outcome.record));
  }
  // Its layers are read below (is the review layer in use?): on a disk of its own, mounted first.
  TNK_RETURN_IF_ERROR(state::mount_own_disk(store.dir(r.id)));
  TNK_ASSIGN_OR_RETURN(SupervisorInputs inputs, read_supervisor_inputs(ctx, r, outcome.record, in, audit_log));
  TNK_ASSIGN_OR_RETURN(const Config* loaded, ctx.config());
  TNK_ASSIGN_OR_RETURN(SupervisorPlan plan, plan_supervisor(r, outcome.record, *loaded, std::move(inputs)));
  for (const auto& note : plan.notes) ctx.log.note(note);
  const supervisor::SupervisorConfig& config = plan.config;
  TNK_RETURN_IF_ERROR(prepare_own_disk(config, outcome.record.backend));
  TNK_RETURN_IF_ERROR(prepare_review(ctx, r, config));
  mark_phase("start: supervisor plan");
  bool vm = outcome.record.backend == BackendKind::kVm;
  ctx.log.verbose("starting the supervisor of " + r.id);
  TNK_ASSIGN_OR_RETURN(auto launched, supervisor::launch_supervisor(config, ready_timeout(outcome.record.backend)));
  mark_phase("start: supervisor ready");
  // An ns sandbox's lower layer is the image tree itself: one deleted while this start ran (`rm -rf` of
  // the cache) left a sandbox without programs. It is stopped, and the next start builds the image again.
  if (!vm) {
    if (auto still = image::find_image(ctx.paths, image.id); !still) {
      (void)stop_sandbox(ctx.paths, r.id, std::chrono::seconds(1), ctx.log);
      return failed("the image " + image.dir.string() + " was removed while " + r.id + " started",
                    "run the command again: it builds the image again");
    }
  }
  for (const auto& note : launched.notes) ctx.log.note(note);
  outcome.record.started_at = std::time(nullptr);
  TNK_RETURN_IF_ERROR(store.save(outcome.record));
  return outcome;
}

// What a start checks and reads before anything is made: the host can run the backend, the limits hold,
// and the key is readable. A running sandbox passed all of it when it started: a command that only enters
// it (the warm path of exec and shell) probes none of it again.
Status prepare_start(Context& ctx, const Resolved& r, StartInputs& in) {
  in.facts = host::gather_host_facts(ctx.env);
  TNK_RETURN_IF_ERROR(check_backend(r.backend, in.facts, r.project.dir));
  TNK_RETURN_IF_ERROR(check_limits(ctx, r));
  TNK_ASSIGN_OR_RETURN(in.gateway, inference_gateway(ctx, r));
  return ok_status();
}

}  // namespace

Result<StartOutcome> ensure_running(Context& ctx, const Resolved& r, const std::filesystem::path& audit_log) {
  StartInputs in;
  const bool was_running = r.state == state::SandboxState::kRunning;
  if (!was_running) {
    TNK_RETURN_IF_ERROR(prepare_start(ctx, r, in));
    mark_phase("start: host checks");
  }
  state::Store store(ctx.paths.sandboxes_dir());
  // The images are made before the sandbox's lock, which stays short: a second command on this sandbox
  // waits (30 s at most) for the lock, not for a first start's image build, and waits for the build
  // itself on the image's own lock.
  std::optional<BootImages> images;
  if (!was_running) {
    TNK_ASSIGN_OR_RETURN(auto seen, store.load(r.id));  // only to know what to make: read again below
    TNK_ASSIGN_OR_RETURN(images, boot_images(ctx, seen, r.backend));
    mark_phase("start: images");
  }
  TNK_ASSIGN_OR_RETURN(FileLock lock, store.lock(r.id, ctx.log));
  TNK_ASSIGN_OR_RETURN(in.existing, store.load(r.id));  // again: another tnk may have created it meanwhile
  state::SandboxState now = state::SandboxState::kAbsent;
  if (in.existing) {
    TNK_ASSIGN_OR_RETURN(now, settled_state(ctx, store, *in.existing));
  }
  if (now == state::SandboxState::kRunning) return running(store, r, *in.existing);
  if (was_running) TNK_RETURN_IF_ERROR(prepare_start(ctx, r, in));  // it stopped meanwhile
  if (now == state::SandboxState::kBroken) recover_broken(ctx, store, r.id);
  // Made again only when it stopped meanwhile, or another tnk made or remade the sandbox differently.
  if (!images || !boot_images_fit(*images, in.existing, r.backend)) {
    TNK_ASSIGN_OR_RETURN(images, boot_images(ctx, in.existing, r.backend));
  }
  in.images = std::move(*images);
  return start_supervisor(ctx, r, store, std::move(in), audit_log);
}

Status stop_sandbox(const Paths& paths, const std::string& id, std::chrono::milliseconds grace, Log& log) {
  state::Store store(paths.sandboxes_dir());
  auto pids = state::live_sandbox_pids(store, id);
  if (pids.empty()) {
    clean_after_crash(paths, id);
    return ok_status();
  }
  auto ctl = store.file(id, state::kControlSocket);
  Status asked = session::request_stop(ctl, grace, grace + std::chrono::seconds(5));
  if (!asked.ok()) {
    // The supervisor does not answer: end it; its sandbox dies with it (PDEATHSIG).
    log.warn("the supervisor of " + id + " did not answer (" + asked.error().message + "); killing it");
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
  }
  for (pid_t pid : pids) wait_for_exit(pid, std::chrono::seconds(5));
  clean_after_crash(paths, id);
  return store.mark_stopped(id, log);
}

}  // namespace tnk::supervised
