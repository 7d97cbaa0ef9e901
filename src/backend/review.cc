#include "backend/review.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "audit/events.h"
#include "backend/enter.h"
#include "backend/protection.h"
#include "backend/stop.h"
#include "core/strings.h"
#include "idmap/userns.h"
#include "review/discard.h"
#include "review/git_ignore.h"
#include "review/layer.h"
#include "review/patch.h"
#include "sandbox/audit_target.h"
#include "state/liveness.h"
#include "state/own_disk.h"
#include "state/store.h"

namespace tnk::backend {
namespace {

struct Opened {
  state::SandboxRecord record;
  review::Layer layer;
  UniqueFd upper, project;
  bool running = false;
};

Result<UniqueFd> open_top(const std::filesystem::path& dir, const std::string& what) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return sys_error(errno, "opening " + what + " " + dir.string());
  return fd;
}

Result<Opened> open_layer(Context& ctx, const std::string& id) {
  state::Store store(ctx.paths.sandboxes_dir());
  TNK_ASSIGN_OR_RETURN(auto record, store.load(id));
  if (!record)
    return not_found("sandbox " + id + " does not exist", "start it in review mode: tnk sandbox start --review");
  Opened o;
  o.record = *record;
  // A disk of its own is mounted again after a restart of the host: the layer is on it.
  TNK_RETURN_IF_ERROR(state::mount_own_disk(store.dir(id)));
  o.layer = review::layer_in(store.dir(id));
  std::error_code ec;
  if (!std::filesystem::exists(o.layer.baseline, ec)) {
    return not_found("sandbox " + id + " has no review layer: it writes the project directly",
                     "`tnk sandbox stop`, then `tnk sandbox start --review` (or `workspace: review` in the manifest)");
  }
  TNK_ASSIGN_OR_RETURN(o.upper, open_top(o.layer.upper, "the review layer"));
  TNK_ASSIGN_OR_RETURN(o.project, open_top(record->project_dir, "the project"));
  o.running = state::observe(store, id) == state::SandboxState::kRunning;
  return o;
}

// A PATH argument as a project-relative path: taken from the cwd, lexically normalized, inside the project.
Result<std::string> project_relative(const Context& ctx, const std::filesystem::path& project, const std::string& arg) {
  std::filesystem::path full = (ctx.cwd / arg).lexically_normal();
  std::filesystem::path rel = full.lexically_relative(project);
  std::string text = rel.generic_string();
  if (text == ".") return std::string();
  if (rel.empty() || text == ".." || text.starts_with("../")) {
    return usage_error(arg + " is not inside the project " + project.string(), "name paths in the project");
  }
  while (text.ends_with('/')) text.pop_back();
  return text;
}

// The changes `request` selects: those below a PATH (each PATH must select one), or all but the
// ignored ones (all of them with --all).
Result<DiffReport> select_changes(Context& ctx, const ReviewRequest& request, Opened& o) {
  TNK_ASSIGN_OR_RETURN(std::vector<review::Change> changes, review::diff_layer(o.upper.get(), o.project.get()));
  DiffReport report;
  report.running = o.running;
  TNK_ASSIGN_OR_RETURN(report.git_aware, review::mark_ignored(o.record.project_dir, changes));
  std::vector<std::string> selectors;
  for (const auto& arg : request.paths) {
    TNK_ASSIGN_OR_RETURN(std::string rel, project_relative(ctx, o.record.project_dir, arg));
    selectors.push_back(rel);
  }
  for (const auto& selector : selectors) {
    bool any =
        std::any_of(changes.begin(), changes.end(), [&](const auto& c) { return review::selects(selector, c.path); });
    if (!any) {
      return not_found("no change to " + (selector.empty() ? std::string(".") : selector) + " in the review layer",
                       "`tnk sandbox diff` lists the changes");
    }
  }
  for (auto& c : changes) {
    bool named =
        std::any_of(selectors.begin(), selectors.end(), [&](const auto& s) { return review::selects(s, c.path); });
    if (!selectors.empty() && !named) continue;
    // A PATH that names an ignored path explicitly selects it; a directory or no PATH leaves it out.
    bool explicit_name = std::find(selectors.begin(), selectors.end(), c.path) != selectors.end();
    if (c.ignored && !request.all && !explicit_name) {
      ++report.ignored_hidden;
      continue;
    }
    report.changes.push_back(std::move(c));
  }
  return report;
}

// A sandbox started meanwhile (between the stop and the lock) would have the layer mounted again.
Status require_stopped(const Opened& o, const std::string& id, const char* verb) {
  if (!o.running) return ok_status();
  return failed("sandbox " + id + " was started again while " + verb + " stopped it",
                "run the " + std::string(verb) + " again");
}

Status write_record(Context& ctx, const ReviewRequest& request, const Opened& o, const nlohmann::json& record) {
  return sandbox::audit_record(ctx, request.audit_log, request.id, o.record.project_dir, record);
}

// Rootless, what root inside made in the layer belongs to the user's subordinate range: what the user
// cannot remove is removed as the range's owner.
Status as_layer_owner(const std::string& what, const std::function<Status()>& change) {
  Status done = change();
  if (done || ::geteuid() == 0) return done;
  auto again = idmap::run_as_range_owner(what, [&change]() -> Result<std::string> {
    TNK_RETURN_IF_ERROR(change());
    return std::string();
  });
  if (!again) return again.error();
  return ok_status();
}

// The PATH arguments as project-relative paths.
Result<std::vector<std::string>> named_paths(const Context& ctx, const ReviewRequest& request, const Opened& o) {
  std::vector<std::string> named;
  for (const auto& arg : request.paths) {
    TNK_ASSIGN_OR_RETURN(std::string rel, project_relative(ctx, o.record.project_dir, arg));
    named.push_back(rel);
  }
  return named;
}

std::string octal(uint32_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode);
  return buf;
}

// Discard's work, on a stopped sandbox, under its lock.
Result<std::vector<review::Touched>> discard_stopped(Context& ctx, const ReviewRequest& request) {
  state::Store store(ctx.paths.sandboxes_dir());
  TNK_ASSIGN_OR_RETURN(std::optional<FileLock> lock, store.lock_existing(request.id, ctx.log));
  TNK_ASSIGN_OR_RETURN(Opened o, open_layer(ctx, request.id));
  TNK_RETURN_IF_ERROR(require_stopped(o, request.id, "discard"));
  TNK_ASSIGN_OR_RETURN(std::vector<std::string> named, named_paths(ctx, request, o));
  bool whole = named.empty() || std::find(named.begin(), named.end(), "") != named.end();
  // Everything the layer holds at the PATHs goes, ignored paths too: select them all for the record.
  ReviewRequest everything = request;
  everything.all = true;
  if (whole) everything.paths.clear();
  TNK_ASSIGN_OR_RETURN(DiffReport selected, select_changes(ctx, everything, o));
  TNK_ASSIGN_OR_RETURN(auto dropped, review::describe_layer(o.upper.get(), selected.changes));
  const std::string what = o.layer.upper.string();
  int upper = o.upper.get();
  if (whole) {
    TNK_RETURN_IF_ERROR(as_layer_owner("emptying " + what, [upper, &what] { return review::empty_dir(upper, what); }));
    TNK_ASSIGN_OR_RETURN(review::Baseline baseline, review::take_baseline(o.record.project_dir));
    TNK_RETURN_IF_ERROR(review::write_layer_baseline(o.layer, baseline));
  } else {
    TNK_RETURN_IF_ERROR(review::check_droppable(upper, named));
    TNK_RETURN_IF_ERROR(
        as_layer_owner("discarding in " + what, [upper, &named] { return review::drop_paths(upper, named); }));
    TNK_ASSIGN_OR_RETURN(review::Baseline baseline, review::read_layer_baseline(o.layer));
    TNK_RETURN_IF_ERROR(review::restamp_paths(o.project.get(), named, baseline));
    TNK_RETURN_IF_ERROR(review::write_layer_baseline(o.layer, baseline));
  }
  TNK_RETURN_IF_ERROR(write_record(
      ctx, request, o, audit::workspace_discard(request.id, o.record.project_dir.string(), to_json(dropped))));
  return dropped;
}

}  // namespace

Result<DiffReport> review_diff(Context& ctx, const ReviewRequest& request) {
  TNK_ASSIGN_OR_RETURN(Opened o, open_layer(ctx, request.id));
  return select_changes(ctx, request, o);
}

Result<PatchReport> review_patch(Context& ctx, const ReviewRequest& request) {
  TNK_ASSIGN_OR_RETURN(Opened o, open_layer(ctx, request.id));
  TNK_ASSIGN_OR_RETURN(DiffReport selected, select_changes(ctx, request, o));
  PatchReport report;
  report.ignored_hidden = selected.ignored_hidden;
  report.running = selected.running;
  TNK_ASSIGN_OR_RETURN(report.lines, review::patch_of(o.upper.get(), o.project.get(), selected.changes));
  return report;
}

Result<std::vector<review::Touched>> review_apply(Context& ctx, const ReviewRequest& request) {
  state::Store store(ctx.paths.sandboxes_dir());
  // No start meanwhile; no sandbox (no lock): open_layer says so.
  TNK_ASSIGN_OR_RETURN(std::optional<FileLock> lock, store.lock_existing(request.id, ctx.log));
  TNK_ASSIGN_OR_RETURN(Opened o, open_layer(ctx, request.id));
  TNK_ASSIGN_OR_RETURN(DiffReport selected, select_changes(ctx, request, o));
  TNK_ASSIGN_OR_RETURN(review::Baseline baseline, review::read_layer_baseline(o.layer));
  TNK_ASSIGN_OR_RETURN(auto refused, review::conflicts(o.project.get(), baseline, selected.changes));
  if (!refused.empty()) {
    return failed("refusing to apply, nothing was written: the project changed underneath the review layer: " +
                      join(refused, "; "),
                  "look at each with `tnk sandbox diff PATH`; apply the other paths by naming them (`tnk sandbox "
                  "apply PATH...`), or drop the layer with `tnk sandbox discard`");
  }
  // While the sandbox runs, its mounted overlay's upper directory stays as it is (review/apply.h).
  auto touched = review::apply_changes(o.upper.get(), o.project.get(), selected.changes, baseline,
                                       o.running ? review::LayerAfter::kKept : review::LayerAfter::kTakenOut);
  // What was applied stays recorded even when a later path failed.
  Status saved = review::write_layer_baseline(o.layer, baseline);
  if (!touched) return touched.error().context("applying the review layer of " + request.id);
  TNK_RETURN_IF_ERROR(saved);
  if (!touched->empty()) {
    TNK_RETURN_IF_ERROR(write_record(
        ctx, request, o, audit::workspace_apply(request.id, o.record.project_dir.string(), to_json(*touched))));
  }
  // What the host's git would now run from the applied layer is held (state/git_guard.h), unless the
  // user named it: `diff` flagged it, and naming it is applying it knowingly.
  TNK_ASSIGN_OR_RETURN(std::vector<std::string> named, named_paths(ctx, request, o));
  TNK_ASSIGN_OR_RETURN(auto audit, sandbox::open_audit(ctx, request.audit_log, request.id, o.record.project_dir));
  guard_git(ctx, request.id, audit, named);
  TNK_RETURN_IF_ERROR(sandbox::audit_outcome(audit));
  return touched;
}

// Overlayfs must not see its layer change under a mounted overlay: a running sandbox is stopped for the
// discard and started again after it (its processes end; docs/workspace.md).
Result<std::vector<review::Touched>> review_discard(Context& ctx, const ReviewRequest& request) {
  TNK_ASSIGN_OR_RETURN(Opened checked, open_layer(ctx, request.id));  // a sandbox without a layer is not stopped
  if (!checked.running) return discard_stopped(ctx, request);
  TNK_RETURN_IF_ERROR(stop_by_id(ctx, request.id, "discard"));
  auto dropped = discard_stopped(ctx, request);
  // Started again whether or not the discard worked, still in review mode.
  TNK_RETURN_IF_ERROR(start_again(ctx, request.audit_log, true, "discard"));
  ctx.log.note(request.id + " was stopped for the discard and started again: its processes ended");
  return dropped;
}

nlohmann::json to_json(const review::Change& c) {
  nlohmann::json j = {{"path", c.path},
                      {"change", review::to_string(c.kind)},
                      {"type", review::to_string(c.type)},
                      {"old_type", review::to_string(c.old_type)},
                      {"ignored", c.ignored}};
  j["old_mode"] = c.old_type == review::EntryType::kNone ? nlohmann::json() : nlohmann::json(octal(c.old_mode));
  j["new_mode"] = c.type == review::EntryType::kNone ? nlohmann::json() : nlohmann::json(octal(c.new_mode));
  j["runs_on_host"] = c.host_run.empty() ? nlohmann::json() : nlohmann::json(c.host_run);
  return j;
}

nlohmann::json to_json(const std::vector<review::Touched>& touched) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : touched) {
    out.push_back({{"path", t.path},
                   {"change", review::to_string(t.kind)},
                   {"type", review::to_string(t.type)},
                   {"sha256", t.sha256.empty() ? nlohmann::json() : nlohmann::json(t.sha256)}});
  }
  return out;
}

}  // namespace tnk::backend
