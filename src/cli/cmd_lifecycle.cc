// tnk sandbox stop | delete, tnk run, tnk shutdown.
#include <algorithm>
#include <iostream>
#include <thread>

#include "audit/events.h"
#include "backend/backend.h"
#include "cli/sandbox_verbs.h"
#include "naming/naming.h"
#include "sandbox/audit_target.h"
#include "sandbox/lima_lifecycle.h"
#include "state/liveness.h"
#include "state/store.h"
#include "workspace/workspace.h"

namespace tnk::cli {
namespace {

// How long a sandbox gets to stop before it is killed (`shutdown --timeout` overrides it).
constexpr unsigned kDefaultStopGraceSeconds = 30;

// A sandbox named on the command line: its record, or why the record could not be read.
struct Target {
  std::string id;
  std::optional<state::SandboxRecord> record;  // nullopt: the record is unreadable (corrupt)
};

// The sandboxes that exist among `ids`. An unreadable record is a target too (delete must be able
// to remove it); a missing one is skipped, with a warning when the user named it.
Result<std::vector<Target>> existing(Context& ctx, const std::vector<std::string>& ids, bool warn_missing) {
  state::Store store(ctx.paths.sandboxes_dir());
  std::vector<Target> targets;
  for (const auto& id : ids) {
    auto record = store.load(id);
    if (!record) {
      ctx.log.warn(record.error().message);
      targets.push_back({id, std::nullopt});
    } else if (*record) {
      targets.push_back({id, **record});
    } else if (warn_missing) {
      ctx.log.warn("sandbox " + id + " does not exist");
    }
  }
  return targets;
}

// Whether a target runs: Lima says for a lima sandbox, the pid files for the others.
bool is_running(Context& ctx, const state::Store& store, const Target& t) {
  if (t.record && t.record->backend == sandbox::kLimaBackend) {
    auto lima = sandbox::lima_states();
    if (lima.problem) ctx.log.warn(*lima.problem);
    return lima.state_of(t.id) == state::SandboxState::kRunning;
  }
  return !state::live_sandbox_pids(store, t.id).empty();
}

Result<std::vector<std::string>> all_ids(Context& ctx) { return state::Store(ctx.paths.sandboxes_dir()).list_ids(); }

// The targets that run, after the dry-run and not-running messages.
std::vector<const Target*> running_targets(Context& ctx, const std::vector<Target>& targets, bool dry_run,
                                           unsigned grace_seconds) {
  state::Store store(ctx.paths.sandboxes_dir());
  std::vector<const Target*> running;
  for (const auto& t : targets) {
    if (!is_running(ctx, store, t)) {
      ctx.log.info(t.id + " is not running");
    } else if (dry_run) {
      ctx.log.info("dry run: would stop " + t.id + " (killed after " + std::to_string(grace_seconds) + " s)");
    } else {
      running.push_back(&t);
    }
  }
  if (targets.empty()) ctx.log.info("no sandbox to stop");
  return running;
}

// Stops every target that runs, all at once (each gets the whole grace period); one that cannot be
// stopped does not keep the others running.
Status stop_targets(Context& ctx, const std::vector<Target>& targets, bool dry_run, unsigned grace_seconds,
                    const std::string& reason) {
  auto running = running_targets(ctx, targets, dry_run, grace_seconds);
  std::vector<Status> results(running.size(), ok_status());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < running.size(); ++i) {
    // A sandbox whose record is unreadable still has a supervisor to ask: records never hold liveness.
    std::string backend = running[i]->record ? running[i]->record->backend : "ns";
    threads.emplace_back([&ctx, &results, i, backend, id = running[i]->id, grace_seconds] {
      Log log(ctx.log.stream(), ctx.log.verbosity());
      results[i] = stop_supervised(ctx.paths, id, backend, std::chrono::seconds(grace_seconds), log);
    });
  }
  for (auto& thread : threads) thread.join();
  std::optional<Error> first_error;
  for (size_t i = 0; i < running.size(); ++i) {
    if (results[i].ok()) {
      record_stop(ctx, running[i]->id, reason);
    } else {
      ctx.log.warn(results[i].error().message);
      if (!first_error) first_error = results[i].error();
    }
  }
  if (first_error) return *first_error;
  return ok_status();
}

// The current project's sandbox id, worked out from the cwd alone: stop and delete need nothing
// else, and must work even when the sandbox's record is corrupt (resolve() would refuse it).
Result<std::string> current_sandbox_id(Context& ctx) {
  TNK_ASSIGN_OR_RETURN(const Config* config, ctx.config());
  TNK_ASSIGN_OR_RETURN(auto project, workspace::resolve_project(config->workspace_root_path, ctx.paths.home, ctx.cwd));
  state::Store store(ctx.paths.sandboxes_dir());
  return naming::sandbox_id(project.name, naming::max_sandbox_id_length(store.root()));
}

struct StopFlags {
  bool all = false;
  std::vector<std::string> names;
};

Result<int> run_stop(Context& ctx, const StopFlags& flags) {
  if (flags.all && !flags.names.empty()) {
    return usage_error("--all cannot be combined with --name", "use either --all or one or more --name");
  }
  std::vector<std::string> ids;
  if (flags.all) {
    TNK_ASSIGN_OR_RETURN(ids, all_ids(ctx));
  } else if (!flags.names.empty()) {
    for (const auto& name : flags.names) TNK_RETURN_IF_ERROR(naming::validate_sandbox_name(name));
    ids = flags.names;
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  } else {
    TNK_ASSIGN_OR_RETURN(std::string id, current_sandbox_id(ctx));
    ids = {id};
  }
  TNK_ASSIGN_OR_RETURN(auto targets, existing(ctx, ids, !flags.names.empty()));
  TNK_RETURN_IF_ERROR(stop_targets(ctx, targets, false, kDefaultStopGraceSeconds, "user"));
  return kExitOk;
}

struct DeleteFlags {
  bool yes = false;
  bool dry_run = false;
};

bool confirmed(const std::string& question) {
  std::cerr << question << " [y/N] " << std::flush;
  std::string answer;
  std::getline(std::cin, answer);
  return answer == "y" || answer == "Y" || answer == "yes";
}

// Everything a vm or ns sandbox owns lives in its state directory, so deleting it is removing
// that directory once nothing runs. A lima sandbox lives in Lima's directory: its backend deletes it.
Result<int> run_delete(Context& ctx, const DeleteFlags& flags) {
  TNK_ASSIGN_OR_RETURN(std::string id, current_sandbox_id(ctx));
  TNK_ASSIGN_OR_RETURN(auto targets, existing(ctx, {id}, false));
  if (targets.empty()) {
    ctx.log.info("sandbox " + id + " does not exist; nothing to delete");
    return kExitOk;
  }
  const Target& t = targets.front();
  state::Store store(ctx.paths.sandboxes_dir());
  std::string project = t.record ? t.record->project_dir.string() : std::string("the project directory");
  if (flags.dry_run) {
    ctx.log.info("dry run: would delete " + t.id + " (" + store.dir(t.id).string() + "); " + project +
                 " is not touched");
    return kExitOk;
  }
  if (!flags.yes) {
    if (!ctx.terminal.stdin_tty || !ctx.terminal.stderr_tty) {
      return permission_denied("refusing to delete " + t.id + " without confirmation",
                               "run it on a terminal, or pass --yes");
    }
    if (!confirmed("delete sandbox " + t.id + " (its installed packages and state; not " + project + ")?")) {
      return failed("not deleted", "");
    }
  }
  if (is_running(ctx, store, t)) {
    TNK_RETURN_IF_ERROR(stop_targets(ctx, {t}, false, kDefaultStopGraceSeconds, "delete"));
  }
  TNK_ASSIGN_OR_RETURN(FileLock lock, store.lock(t.id, ctx.log));
  if (is_running(ctx, store, t)) {
    return failed("sandbox " + t.id + " was started again while it was being deleted", "run the delete again");
  }
  if (t.record && t.record->backend == sandbox::kLimaBackend) {
    TNK_RETURN_IF_ERROR(sandbox::delete_lima_instance(t.id, ctx.log));  // Lima's instance; its state dir below
  }
  TNK_RETURN_IF_ERROR(store.remove(t.id));
  if (auto audit = sandbox::open_audit(ctx, "", t.id)) sandbox::audit_append(ctx, *audit, audit::sandbox_delete(t.id));
  ctx.log.info("deleted " + t.id + "; " + project + " is untouched");
  return kExitOk;
}

}  // namespace

void add_sandbox_lifecycle_commands(CLI::App& sandbox, CommandTable& table) {
  auto* stop = sandbox.add_subcommand("stop", "Stop the current project's sandbox, named ones, or all");
  describe(*stop, "Stop sandboxes (graceful, then forced after a timeout). Their disks and state are kept.",
           "tnk sandbox stop --name tnk-homepage");
  auto stop_flags = std::make_shared<StopFlags>();
  stop->add_flag("--all", stop_flags->all, "Stop every sandbox");
  stop->add_option("--name", stop_flags->names, "Stop this sandbox (repeatable)");
  table.add(stop, [stop_flags](Context& ctx) { return run_stop(ctx, *stop_flags); });

  auto* del = sandbox.add_subcommand("delete", "Delete the current project's sandbox (never the project files)");
  describe(*del,
           "Stop and delete the current project's sandbox: its disk, installed packages and state. The project "
           "directory is never touched. Asks on a terminal; pass --yes otherwise.",
           "tnk sandbox delete --dry-run");
  auto delete_flags = std::make_shared<DeleteFlags>();
  del->add_flag("-y,--yes", delete_flags->yes, "Do not ask for confirmation");
  del->add_flag("-n,--dry-run", delete_flags->dry_run, "Show what would be deleted, change nothing");
  table.add(del, [delete_flags](Context& ctx) { return run_delete(ctx, *delete_flags); });
}

void add_lifecycle_commands(CLI::App& root, CommandTable& table) {
  auto* run = root.add_subcommand("run", "Start the current project's sandbox");
  describe(*run, "Start the current project's sandbox (the short form of `tnk sandbox start`).", "tnk run");
  auto run_dry = std::make_shared<bool>(false);
  run->add_flag("-n,--dry-run", *run_dry, "Show what would be started, change nothing");
  table.add(run, [run_dry](Context& ctx) -> Result<int> {
    TNK_ASSIGN_OR_RETURN(sandbox::Resolved r, resolve_to_run(ctx, {}));
    if (*run_dry) {
      ctx.log.info("dry run: would start " + r.id + " (" + r.backend + " backend, profile " + r.profile + ")");
      return kExitOk;
    }
    std::optional<audit::AuditWriter> audit;
    TNK_ASSIGN_OR_RETURN(audit, sandbox::open_audit(ctx, "", r.id));
    TNK_RETURN_IF_ERROR(start_and_provision(ctx, r, audit));
    return kExitOk;
  });

  auto* shutdown = root.add_subcommand("shutdown", "Stop every sandbox");
  describe(*shutdown, "Stop every running sandbox, in parallel, each with a grace period before it is killed.",
           "tnk shutdown --timeout 10");
  auto timeout = std::make_shared<unsigned>(kDefaultStopGraceSeconds);
  auto shutdown_dry = std::make_shared<bool>(false);
  shutdown->add_option("--timeout", *timeout, "Seconds each sandbox gets to stop before it is killed")
      ->capture_default_str();
  shutdown->add_flag("-n,--dry-run", *shutdown_dry, "Show what would be stopped, change nothing");
  table.add(shutdown, [shutdown_dry, timeout](Context& ctx) -> Result<int> {
    TNK_ASSIGN_OR_RETURN(auto ids, all_ids(ctx));
    TNK_ASSIGN_OR_RETURN(auto targets, existing(ctx, ids, false));
    TNK_RETURN_IF_ERROR(stop_targets(ctx, targets, *shutdown_dry, *timeout, "shutdown"));
    return kExitOk;
  });
}

}  // namespace tnk::cli
