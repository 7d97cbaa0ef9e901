#include "backend/supervised/session_run.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "state/layout.h"
#include "state/liveness.h"
#include "state/store.h"

namespace tnk::supervised {

using sandbox::Resolved;
using sandbox::SessionSpec;

session::ExecRequest exec_request(Context& ctx, const Resolved& r, const SessionSpec& spec) {
  session::ExecRequest request;
  request.argv = spec.argv;
  request.env = sandbox::session_environment(ctx.env, r, spec.user_env);
  request.cwd = r.guest_workdir;
  request.tty = spec.tty;
  request.identity = spec.identity;
  request.provisioning = spec.provisioning;
  request.egress_allow = spec.egress_allow;
  request.egress_any = spec.egress_any;
  winsize size{};
  if (spec.tty && ::ioctl(STDIN_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_row > 0) {
    request.rows = size.ws_row;
    request.cols = size.ws_col;
  }
  return request;
}

Result<UniqueFd> connect_sandbox(Context& ctx, const std::string& id) {
  state::Store store(ctx.paths.sandboxes_dir());
  auto fd = session::connect_control(store.file(id, state::kControlSocket));
  if (fd) return fd;
  // A supervisor that died under its started sandbox (killed, crashed, even during this very start):
  // the sandbox is not absent, and starting it is the fix, not a repeat of what the user just ran.
  if (state::observe(store, id) == state::SandboxState::kBroken) {
    return failed("the supervisor of sandbox " + id + " has ended (" + fd.error().message + "); its log is " +
                      store.file(id, state::kSupervisorLog).string(),
                  "`tnk sandbox start` starts it again, with its files as they were");
  }
  return fd.error().context("sandbox " + id).with_hint("start it with `tnk sandbox start`");
}

Result<int> run_session(Context& ctx, const Resolved& r, const SessionSpec& spec,
                        std::optional<audit::AuditWriter>& audit, const session::ClientOptions& options,
                        bool* sandbox_stopped) {
  session::ExecRequest request = exec_request(ctx, r, spec);
  if (audit) request.audit_log = audit->path().string();  // the sandbox's network records go there too
  TNK_ASSIGN_OR_RETURN(UniqueFd ctl, connect_sandbox(ctx, r.id));
  TNK_RETURN_IF_ERROR(sandbox::audit_session_start(audit, r, request.cwd, spec));
  auto ran = session::run_session(ctl.get(), request, options);
  // Every session_start gets its session_exit: the status (the supervisor reports 128+n for a signal, as
  // shells do; a refused command's is 127, 126 or 1), or why the end was never seen.
  if (ran) {
    sandbox::audit_session_exit(audit, r, ran->exit_code);
  } else {
    sandbox::audit_session_lost(audit, r, ran.error().message);
  }
  if (audit) (void)audit->sync();
  if (!ran) return ran.error();
  // The program could not be started: say why once, and exit as a shell would (127 / 126).
  if (ran->refused) ctx.out.error(*ran->refused);
  if (!ran->note.empty()) ctx.log.warn(ran->note);
  if (ran->sandbox_stopped && sandbox_stopped) {
    *sandbox_stopped = true;  // the caller says it
  } else if (ran->sandbox_stopped) {
    ctx.log.warn("sandbox " + r.id + " was stopped while the session ran; the session ended with status " +
                 std::to_string(ran->exit_code));
  }
  return ran->exit_code;
}

}  // namespace tnk::supervised
