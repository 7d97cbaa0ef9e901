// tnk sandbox stop | delete, tnk run, tnk shutdown.
#include <algorithm>

#include "backend/enter.h"
#include "backend/stop.h"
#include "cli/prompt.h"
#include "cli/sandbox_verbs.h"
#include "naming/naming.h"
#include "state/store.h"
#include "workspace/workspace.h"

namespace tnk::cli {
namespace {

// How long a sandbox gets to stop before it is killed (`shutdown --timeout` overrides it).
constexpr unsigned kDefaultStopGraceSeconds = 30;

Result<std::vector<std::string>> all_ids(Context& ctx) { return state::Store(ctx.paths.sandboxes_dir()).list_ids(); }

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
  TNK_ASSIGN_OR_RETURN(auto targets, backend::existing_targets(ctx, ids, !flags.names.empty()));
  TNK_RETURN_IF_ERROR(
      backend::stop_targets(ctx, targets, false, std::chrono::seconds(kDefaultStopGraceSeconds), "user"));
  return kExitOk;
}

struct DeleteFlags {
  bool yes = false;
  bool dry_run = false;
};

Result<int> run_delete(Context& ctx, const DeleteFlags& flags) {
  TNK_ASSIGN_OR_RETURN(std::string id, current_sandbox_id(ctx));
  TNK_ASSIGN_OR_RETURN(auto targets, backend::existing_targets(ctx, {id}, false));
  if (targets.empty()) {
    ctx.log.info("sandbox " + id + " does not exist; nothing to delete");
    return kExitOk;
  }
  const backend::Target& t = targets.front();
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
  TNK_RETURN_IF_ERROR(backend::delete_target(ctx, t, std::chrono::seconds(kDefaultStopGraceSeconds)));
  ctx.log.info("deleted " + t.id + "; " + project + " is untouched");
  return kExitOk;
}

}  // namespace

Result<std::string> current_sandbox_id(Context& ctx) {
  TNK_ASSIGN_OR_RETURN(const Config* config, ctx.config());
  TNK_ASSIGN_OR_RETURN(auto project, workspace::resolve_project(config->workspace_root_path, ctx.paths.home, ctx.cwd));
  state::Store store(ctx.paths.sandboxes_dir());
  TNK_ASSIGN_OR_RETURN(std::string id, naming::sandbox_id(project.name, naming::max_sandbox_id_length(store.root())));
  if (ctx.selected_sandbox.empty()) return id;
  return naming::select_sandbox(id, ctx.selected_sandbox);
}

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
    if (*run_dry) {
      TNK_ASSIGN_OR_RETURN(sandbox::StartPlan plan, backend::start_plan(ctx, {}));
      ctx.log.info("dry run: would start " + plan.id + " (" + plan.backend + " backend, profile " + plan.profile + ")");
      return kExitOk;
    }
    return backend::enter(ctx, {});
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
    TNK_ASSIGN_OR_RETURN(auto targets, backend::existing_targets(ctx, ids, false));
    TNK_RETURN_IF_ERROR(backend::stop_targets(ctx, targets, *shutdown_dry, std::chrono::seconds(*timeout), "shutdown"));
    return kExitOk;
  });
}

}  // namespace tnk::cli
