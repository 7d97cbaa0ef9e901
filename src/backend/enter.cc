#include "backend/enter.h"

#include <chrono>

#include "audit/events.h"
#include "backend/protection.h"
#include "backend/registry.h"
#include "core/phase_timer.h"
#include "sandbox/audit_target.h"

namespace tnk::backend {
namespace {

// Resolves the sandbox for a command that will run it and prints its notes: fallbacks, a down
// endpoint, a backend weaker than vm. Printed by the command that starts the sandbox; a command that
// only enters a running one (`start_verb` false) shows them with -v only, so that an orchestrator's
// thousandth `exec` prints what the first one printed no more.
Result<sandbox::Resolved> resolve_to_run(Context& ctx, const sandbox::ResolveOptions& options, bool start_verb) {
  TNK_ASSIGN_OR_RETURN(sandbox::Resolved r, backend::resolve(ctx, options));
  const bool entering = !start_verb && r.state == state::SandboxState::kRunning;
  for (const auto& note : r.notes) entering ? ctx.log.verbose(note) : ctx.log.note(note);
  if (!r.backend_weaker_note.empty()) ctx.log.note(r.backend_weaker_note);
  return r;
}

// Starts the sandbox when it is not running and provisions it when its profile's inputs changed.
// Writes sandbox_start to `audit` when it started it. What a start (or `start` of a running sandbox)
// was told of the endpoint is kept for the sessions exec and shell run later (the warm path).
Status start_and_provision(Context& ctx, const EnterRequest& request, sandbox::Backend& backend, sandbox::Resolved& r,
                           std::optional<audit::AuditWriter>& audit) {
  auto began = std::chrono::steady_clock::now();
  std::filesystem::path audit_log = audit ? audit->path() : std::filesystem::path();
  TNK_ASSIGN_OR_RETURN(auto outcome, backend.ensure_running(ctx, r, audit_log));
  mark_phase(outcome.already_running ? "reach the running sandbox" : "start");
  if (!outcome.already_running || request.start_verb) {
    Status kept = sandbox::save_started_with(state::Store(ctx.paths.sandboxes_dir()), r.id,
                                             {outcome.record.started_at.value_or(0), r.host_inference_url, r.model});
    if (!kept.ok()) ctx.log.warn(kept.error().message + " (later commands ask the endpoint again)");
  }
  if (!outcome.already_running) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began);
    ctx.log.info((outcome.created ? "created and started " : "started ") + r.id + " (" + to_string(r.backend) +
                 " backend) in " + std::to_string(ms.count()) + " ms");
    sandbox::audit_append(
        audit, audit::sandbox_start(r.id, to_string(r.backend), r.profile, outcome.record.project_dir.string()));
  }
  r.record = outcome.record;
  r.state = state::SandboxState::kRunning;
  sandbox::ProvisionRequest provision;
  provision.sandbox_was_running = outcome.already_running;
  provision.reprovision = request.reprovision;
  provision.check_guest_token = request.start_verb;
  Status provisioned = backend.provision_if_needed(ctx, r, provision, audit);
  mark_phase("provisioning check");
  return provisioned;
}

}  // namespace

Result<int> enter(Context& ctx, const EnterRequest& request) {
  sandbox::ResolveOptions options = request.resolve;
  options.keep_started_endpoint = !request.start_verb;
  TNK_ASSIGN_OR_RETURN(sandbox::Resolved r, resolve_to_run(ctx, options, request.start_verb));
  TNK_ASSIGN_OR_RETURN(auto backend, open_backend(ctx, r.backend));
  TNK_ASSIGN_OR_RETURN(auto audit, sandbox::open_audit(ctx, request.audit_log, r.id, r.project.dir));
  mark_phase("audit log");
  Status ready = start_and_provision(ctx, request, *backend, r, audit);
  bool fatal = request.start_verb || !request.session || r.state != state::SandboxState::kRunning;
  if (!ready.ok() && fatal) return ready.error();
  if (!ready.ok()) ctx.log.warn(ready.error().message + " (" + ready.error().hint + ")");
  if (!request.session) {
    TNK_RETURN_IF_ERROR(sandbox::audit_outcome(audit));
    return 0;
  }
  // A record lost before the session makes run_session refuse to run it; one lost after it (its
  // session_exit) makes the command fail instead of returning the session's status.
  Result<int> code = backend->run_session(ctx, r, *request.session, audit);
  mark_phase("session");
  if (backend->capabilities().protected_paths) report_appeared(ctx, r.id, audit);
  mark_phase("protected paths");
  if (!code) return code;
  Status recorded = sandbox::audit_outcome(audit);
  if (!recorded.ok()) return recorded.error().context("the session ended with status " + std::to_string(*code));
  return *code;
}

Status start_again(Context& ctx, const std::string& audit_log, bool review, const std::string& what) {
  EnterRequest again;
  again.audit_log = audit_log;
  again.resolve.review = review;
  TNK_ASSIGN_OR_RETURN(int started, enter(ctx, again));
  if (started != 0) return failed("the sandbox was stopped for the " + what + " and did not start again");
  return ok_status();
}

Result<sandbox::StartPlan> start_plan(Context& ctx, const sandbox::ResolveOptions& options) {
  TNK_ASSIGN_OR_RETURN(sandbox::Resolved r, resolve_to_run(ctx, options, true));
  TNK_ASSIGN_OR_RETURN(auto backend, open_backend(ctx, r.backend));
  return backend->start_plan(ctx, r);
}

}  // namespace tnk::backend
