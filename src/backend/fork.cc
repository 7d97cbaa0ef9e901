#include "backend/fork.h"

#include <ctime>
#include <thread>

#include "audit/events.h"
#include "backend/checkpoint.h"
#include "backend/own_state.h"
#include "core/file_lock.h"
#include "core/subprocess.h"
#include "naming/naming.h"
#include "sandbox/audit_target.h"
#include "sandbox/resolve.h"
#include "state/own_disk.h"
#include "state/store.h"

namespace tnk::backend {
namespace {

namespace fs = std::filesystem;

constexpr int kMostForks = 64;

// The next free fork numbers of `parent`: after the highest one in use (a deleted fork's number is
// not given again while a later one lives).
Result<int> first_free_number(const state::Store& store, const std::string& parent) {
  TNK_ASSIGN_OR_RETURN(std::vector<std::string> ids, store.list_ids());
  int highest = 0;
  for (const auto& id : ids) highest = std::max(highest, naming::fork_number(parent, id));
  return highest + 1;
}

// One fork's state directory and record: a copy of `from` (the parent's directory or a checkpoint's).
Result<nlohmann::json> make_fork(const state::Store& store, const state::SandboxRecord& parent, const std::string& id,
                                 const fs::path& from, std::optional<uint64_t> own_disk) {
  state::SandboxRecord record = parent;
  record.id = id;
  record.parent = parent.id;
  record.created_at = static_cast<int64_t>(std::time(nullptr));
  record.started_at.reset();
  record.stopped_at.reset();
  TNK_RETURN_IF_ERROR(store.save(record));
  // A parent whose layers are on a disk of its own gives each fork one of the same size, to copy onto.
  Status disk = own_disk ? state::make_own_disk(store.dir(id), *own_disk) : ok_status();
  if (!disk) {
    (void)store.remove(id);
    return disk.error().context("making fork " + id);
  }
  auto copied = copy_own_state(from, store.dir(id));
  Status pointed = copied ? repoint_overlay(store.dir(id)) : ok_status();
  if (!copied || !pointed) {
    (void)store.remove(id);
    return (copied ? pointed.error() : copied.error()).context("making fork " + id);
  }
  return copied;
}

// Each fork started by a `tnk --sandbox ID sandbox start` of its own, all at once: each has its own
// supervisor, and a start that fails leaves the others running.
std::vector<Result<ProcessResult>> start_all(Context& ctx, const ForkRequest& request,
                                             const std::vector<std::string>& ids) {
  std::vector<Result<ProcessResult>> results(ids.size(), failed("not started"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::vector<std::string> argv = {ctx.self_exe.string(), "--sandbox", ids[i], "sandbox", "start", "-q"};
    argv.insert(argv.end(), request.start_flags.begin(), request.start_flags.end());
    if (!request.audit_log.empty()) argv.insert(argv.end(), {"--audit-log", request.audit_log});
    threads.emplace_back([&results, i, argv = std::move(argv)] {
      ProcessOptions options;
      options.capture_stdout = true;
      options.capture_stderr = true;
      results[i] = run_process(argv, options);
    });
  }
  for (auto& thread : threads) thread.join();
  return results;
}

}  // namespace

Result<ForkReport> fork_sandbox(Context& ctx, const ForkRequest& request) {
  if (request.count < 1 || request.count > kMostForks) {
    return usage_error("fork -n takes 1 to " + std::to_string(kMostForks) + " forks");
  }
  if (!ctx.selected_sandbox.empty() && ctx.selected_sandbox.find('.') != std::string::npos) {
    return usage_error("a fork cannot be forked again", "fork the project's sandbox, or checkpoint it first");
  }
  TNK_ASSIGN_OR_RETURN(sandbox::Resolved parent, sandbox::resolve(ctx, {}));
  if (!parent.record) {
    return not_found("sandbox " + parent.id + " does not exist yet", "`tnk sandbox start` makes and provisions it");
  }
  state::Store store(ctx.paths.sandboxes_dir());
  ForkReport report{parent.id, request.from, {}};
  fs::path from = store.dir(parent.id);
  if (!request.from.empty()) {
    TNK_RETURN_IF_ERROR(find_checkpoint(ctx, parent.id, request.from));
    from = checkpoint_dir(ctx, parent.id, request.from);
  }
  std::optional<uint64_t> own_disk;
  if (state::has_own_disk(from)) {
    if (request.from.empty()) TNK_RETURN_IF_ERROR(state::mount_own_disk(from));
    TNK_ASSIGN_OR_RETURN(const Config* config, ctx.config());
    own_disk = parent.manifest.disk_bytes.value_or(config->sandbox_disk_bytes.value);
  }
  // The parent's lock while the forks are made: two forks at once never take the same numbers, and the
  // parent is not stopped, started or deleted under the copy.
  TNK_ASSIGN_OR_RETURN(std::optional<FileLock> lock, store.lock_existing(parent.id, ctx.log));
  if (!lock) return not_found("sandbox " + parent.id + " was deleted meanwhile");
  TNK_ASSIGN_OR_RETURN(int first, first_free_number(store, parent.id));
  const std::string longest = naming::fork_id(parent.id, first + request.count - 1);
  if (longest.size() > naming::max_sandbox_id_length(store.root())) {
    return failed("fork id " + longest + " is too long for a socket path below " + store.root().string(),
                  "shorten the project's directory name, or XDG_STATE_HOME");
  }
  TNK_ASSIGN_OR_RETURN(auto audit, sandbox::open_audit(ctx, request.audit_log, parent.id, parent.project.dir));
  {
    std::optional<UniqueFd> held;  // the parent holds still while every fork is copied from it
    if (request.from.empty()) {
      TNK_ASSIGN_OR_RETURN(held, hold_still(ctx, parent.id));
    }
    for (int n = first; n < first + request.count; ++n) {
      const std::string id = naming::fork_id(parent.id, n);
      TNK_ASSIGN_OR_RETURN(nlohmann::json entries, make_fork(store, *parent.record, id, from, own_disk));
      nlohmann::json from_state = {{"from", request.from.empty() ? nlohmann::json() : nlohmann::json(request.from)},
                                   {"entries", entries}};
      sandbox::audit_append(audit, audit::sandbox_fork(parent.id, id, from_state));
      report.forks.push_back(id);
    }
  }
  lock.reset();
  TNK_RETURN_IF_ERROR(sandbox::audit_outcome(audit));
  ctx.log.info("starting " + std::to_string(report.forks.size()) + " fork(s) of " + parent.id);
  auto started = start_all(ctx, request, report.forks);
  std::optional<Error> first_error;
  for (size_t i = 0; i < started.size(); ++i) {
    const auto& r = started[i];
    if (r && r->exit_code == 0) continue;
    std::string why = r ? r->err : r.error().message;
    ctx.log.warn("fork " + report.forks[i] + " did not start: " + why);
    if (!first_error) {
      first_error = failed("fork " + report.forks[i] + " did not start",
                           "`tnk --sandbox " + report.forks[i] + " sandbox start` says why");
    }
  }
  if (first_error) return *first_error;
  return report;
}

}  // namespace tnk::backend
