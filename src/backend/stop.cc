#include "backend/stop.h"

#include <thread>

#include "audit/events.h"
#include "backend/protection.h"
#include "backend/registry.h"
#include "core/file_lock.h"
#include "sandbox/audit_target.h"
#include "state/store.h"

namespace tnk::backend {
namespace {

// A target whose record is unreadable is asked as a supervised sandbox: its supervisor's pid file
// says whether it runs, and records never hold liveness.
BackendKind kind_of(const Target& t) { return t.record ? t.record->backend : BackendKind::kNs; }

bool is_running(Context& ctx, const Target& t) {
  auto backend = open_backend(ctx, kind_of(t));
  if (!backend) return false;
  sandbox::Observed seen = (*backend)->observe(ctx.paths, t.id);
  if (seen.problem) ctx.log.warn(*seen.problem);
  return seen.state == state::SandboxState::kRunning;
}

// The targets that run, after the dry-run and not-running messages.
std::vector<const Target*> running_targets(Context& ctx, const std::vector<Target>& targets, bool dry_run,
                                           std::chrono::seconds grace) {
  std::vector<const Target*> running;
  for (const auto& t : targets) {
    if (!is_running(ctx, t)) {
      ctx.log.info(t.id + " is not running");
    } else if (dry_run) {
      ctx.log.info("dry run: would stop " + t.id + " (killed after " + std::to_string(grace.count()) + " s)");
    } else {
      running.push_back(&t);
    }
  }
  if (targets.empty()) ctx.log.info("no sandbox to stop");
  return running;
}

// After a stop: the message, and sandbox_stop in the audit log when `audit = true` (an error when it
// cannot be written: the sandbox is stopped, but the log must not miss it silently).
Status record_stop(Context& ctx, const std::string& id, const std::string& reason) {
  ctx.log.info("stopped " + id);
  TNK_ASSIGN_OR_RETURN(auto audit, sandbox::open_audit(ctx, "", id));
  warn_appeared_at_stop(ctx, id, audit);
  sandbox::audit_append(audit, audit::sandbox_stop(id, reason));
  return sandbox::audit_outcome(audit);
}

}  // namespace

Result<std::vector<Target>> existing_targets(Context& ctx, const std::vector<std::string>& ids, bool warn_missing) {
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

Status stop_targets(Context& ctx, const std::vector<Target>& targets, bool dry_run, std::chrono::seconds grace,
                    const std::string& reason) {
  auto running = running_targets(ctx, targets, dry_run, grace);
  std::vector<Status> results(running.size(), ok_status());
  // Opened here, not in the threads: opening one may read the configuration, which is loaded once.
  std::vector<std::unique_ptr<sandbox::Backend>> backends(running.size());
  for (size_t i = 0; i < running.size(); ++i) {
    auto opened = open_backend(ctx, kind_of(*running[i]));
    if (opened) {
      backends[i] = std::move(*opened);
    } else {
      results[i] = opened.error();
    }
  }
  std::vector<std::thread> threads;
  for (size_t i = 0; i < running.size(); ++i) {
    if (!backends[i]) continue;
    threads.emplace_back([&ctx, &results, &backends, i, target = running[i], grace] {
      Log log(ctx.log.stream(), ctx.log.verbosity());
      results[i] = backends[i]->stop(ctx.paths, target->id, grace, log);
    });
  }
  for (auto& thread : threads) thread.join();
  std::optional<Error> first_error;
  for (size_t i = 0; i < running.size(); ++i) {
    if (results[i].ok()) results[i] = record_stop(ctx, running[i]->id, reason);
    if (!results[i].ok()) {
      ctx.log.warn(results[i].error().message);
      if (!first_error) first_error = results[i].error();
    }
  }
  if (first_error) return *first_error;
  return ok_status();
}

Status stop_by_id(Context& ctx, const std::string& id, const std::string& reason) {
  TNK_ASSIGN_OR_RETURN(auto targets, existing_targets(ctx, {id}, true));
  return stop_targets(ctx, targets, false, std::chrono::seconds(10), reason);
}

Status delete_target(Context& ctx, const Target& t, std::chrono::seconds grace) {
  if (is_running(ctx, t)) TNK_RETURN_IF_ERROR(stop_targets(ctx, {t}, false, grace, "delete"));
  state::Store store(ctx.paths.sandboxes_dir());
  TNK_ASSIGN_OR_RETURN(std::optional<FileLock> lock, store.lock_existing(t.id, ctx.log));
  if (!lock) {  // another delete removed it while this one stopped it or waited
    ctx.log.info("sandbox " + t.id + " was deleted meanwhile");
    return ok_status();
  }
  if (is_running(ctx, t)) {
    return failed("sandbox " + t.id + " was started again while it was being deleted", "run the delete again");
  }
  // Opened first: a log that cannot be opened stops the delete before anything is removed.
  TNK_ASSIGN_OR_RETURN(auto audit, sandbox::open_audit(ctx, "", t.id));
  if (t.record) {
    TNK_ASSIGN_OR_RETURN(auto backend, open_backend(ctx, t.record->backend));
    TNK_RETURN_IF_ERROR(backend->remove_outside_state(t.id, ctx.log));
  }
  TNK_RETURN_IF_ERROR(store.remove(t.id));
  sandbox::audit_append(audit, audit::sandbox_delete(t.id));
  return sandbox::audit_outcome(audit);
}

}  // namespace tnk::backend
