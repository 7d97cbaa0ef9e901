#include "sandbox/session_run.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "audit/events.h"
#include "sandbox/audit_target.h"
#include "state/layout.h"
#include "state/store.h"

namespace tnk::sandbox {

std::vector<std::string> session_environment(const Env& host, const Resolved& r,
                                             const std::vector<std::string>& user_env) {
  std::vector<std::string> env;
  for (const char* name : {"TERM", "COLORTERM", "COLUMNS", "LINES", "LANG"}) {
    if (auto value = host.get(name)) env.push_back(std::string(name) + "=" + *value);
  }
  for (const auto& [key, value] : r.runtime_env) env.push_back(key + "=" + value);
  env.insert(env.end(), user_env.begin(), user_env.end());
  return env;
}

session::ExecRequest exec_request(Context& ctx, const Resolved& r, const SessionSpec& spec) {
  session::ExecRequest request;
  request.argv = spec.argv;
  request.env = session_environment(ctx.env, r, spec.user_env);
  request.cwd = r.guest_workdir;
  request.tty = spec.tty;
  request.identity = spec.identity;
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
  if (!fd) return fd.error().context("sandbox " + id).with_hint("start it with `tnk sandbox start`");
  return fd;
}

namespace {

std::vector<std::string> env_names(const std::vector<std::string>& assignments) {
  std::vector<std::string> names;
  for (const auto& kv : assignments) names.push_back(kv.substr(0, kv.find('=')));
  return names;
}

}  // namespace

Result<int> run_session(Context& ctx, const Resolved& r, const SessionSpec& spec,
                        std::optional<audit::AuditWriter>& audit, const session::ClientOptions& options) {
  session::ExecRequest request = exec_request(ctx, r, spec);
  if (audit) request.audit_log = audit->path().string();  // the sandbox's network records go there too
  TNK_ASSIGN_OR_RETURN(UniqueFd ctl, connect_sandbox(ctx, r.id));
  audit_append(ctx, audit, audit::session_start(r.id, request.cwd, spec.tty, spec.tty, r.runtime_env));
  audit_append(ctx, audit,
               audit::exec_invocation(r.id, request.argv, spec.tty, r.runtime_env, env_names(spec.user_env)));
  auto ran = session::run_session(ctl.get(), request, options);
  if (ran && !ran->refused) {
    std::optional<int> exit_code, signal;
    if (ran->exit_code > 128 && ran->exit_code < 128 + 65) {
      signal = ran->exit_code - 128;  // the supervisor reports 128+n for a signal, as shells do
    } else {
      exit_code = ran->exit_code;
    }
    audit_append(ctx, audit, audit::session_exit(r.id, exit_code, signal));
  }
  if (audit) (void)audit->sync();
  if (!ran) return ran.error();
  // The program could not be started: say why once, and exit as a shell would (127 / 126).
  if (ran->refused) ctx.out.error(*ran->refused);
  return ran->exit_code;
}

}  // namespace tnk::sandbox
