#include "sandbox/session_spec.h"

#include "audit/events.h"
#include "sandbox/audit_target.h"

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

Status audit_session_start(std::optional<audit::AuditWriter>& audit, const Resolved& r, const std::string& cwd,
                           const SessionSpec& spec) {
  std::vector<std::string> names;
  for (const auto& kv : spec.user_env) names.push_back(kv.substr(0, kv.find('=')));
  audit_append(audit, audit::session_start(r.id, cwd, spec.tty, spec.tty, r.runtime_env));
  audit_append(audit, audit::exec_invocation(r.id, spec.argv, spec.tty, r.runtime_env, names));
  Status recorded = audit_outcome(audit);
  if (!recorded.ok()) return recorded.error().context("not running the session");
  return ok_status();
}

void audit_session_exit(std::optional<audit::AuditWriter>& audit, const Resolved& r, int status) {
  std::optional<int> exit_code, signal;
  if (status > 128 && status < 128 + 65) {
    signal = status - 128;
  } else {
    exit_code = status;
  }
  audit_append(audit, audit::session_exit(r.id, exit_code, signal));
}

void audit_session_lost(std::optional<audit::AuditWriter>& audit, const Resolved& r, const std::string& why) {
  audit_append(audit, audit::session_exit(r.id, std::nullopt, std::nullopt, why));
}

}  // namespace tnk::sandbox
