// Builders for the audit events (docs/audit-format.md). They return the event's own fields;
// AuditWriter adds seq, prev and ts. Names and fields of session_start, exec_invocation and
// session_exit are the original tnk's; the others are ours.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tnk::audit {

// TNK_* runtime values given to the sandbox (TNK_INFERENCE_URL, TNK_MODEL_NAME, ...). The caller
// filters: values of user `-e` variables must NEVER be passed here (they may be secrets).
using RuntimeEnv = std::map<std::string, std::string>;

nlohmann::json session_start(const std::string& container_id, const std::string& workdir, bool tty, bool requires_tty,
                             const RuntimeEnv& runtime_env);

// `argv` is the real argv that was executed. `env_names` are the names of the user's `-e`
// variables, never their values; written as "user_env_names".
nlohmann::json exec_invocation(const std::string& container_id, const std::vector<std::string>& argv, bool tty,
                               const RuntimeEnv& runtime_env, const std::vector<std::string>& env_names);

// exit_code is null when the command was killed by a signal; "signal" is present when known. "lost" (the
// reason) replaces both when the session's end was never seen: its supervisor went away under it.
nlohmann::json session_exit(const std::string& container_id, std::optional<int> exit_code, std::optional<int> signal,
                            const std::string& lost = {});

nlohmann::json sandbox_start(const std::string& container_id, const std::string& backend, const std::string& profile,
                             const std::string& project_dir);
nlohmann::json sandbox_stop(const std::string& container_id, const std::string& reason);
nlohmann::json sandbox_delete(const std::string& container_id);
// A protected path (mounts.readonly) that was missing at start exists now: nothing protected it.
nlohmann::json protected_path_appeared(const std::string& container_id, const std::string& path,
                                       const std::string& host_path);
// The host's git would have used something the sandbox wrote (state/git_guard.h): tnk renamed it.
nlohmann::json git_entry_held(const std::string& container_id, const std::string& path, const std::string& held_as,
                              const std::string& what);

// Review mode (docs/workspace.md): what `tnk sandbox apply` wrote into the project, or `discard` dropped
// from the layer; `paths` is [{"path", "change", "type", "sha256"}], sha256 null where there is no content.
nlohmann::json workspace_apply(const std::string& container_id, const std::string& project_dir,
                               const nlohmann::json& paths);
nlohmann::json workspace_discard(const std::string& container_id, const std::string& project_dir,
                                 const nlohmann::json& paths);

// Checkpoints and forks (docs/checkpoints.md): `action` is "checkpoint", "restore" or "remove" for
// `checkpoint` records, and `state` says what the copy holds: {"name", "entries": [{"path", "bytes",
// "sha256"}]}, sha256 for a file and null for a directory tree.
nlohmann::json sandbox_checkpoint(const std::string& container_id, const std::string& action,
                                  const nlohmann::json& state);
// A fork of `container_id`: `fork_id`, and the state it started from as above ("from": a checkpoint's
// name, or null for the running sandbox).
nlohmann::json sandbox_fork(const std::string& container_id, const std::string& fork_id, const nlohmann::json& state);

nlohmann::json provision_start(const std::string& container_id, const std::string& profile,
                               const std::string& fingerprint);
nlohmann::json provision_end(const std::string& container_id, const std::string& profile, int exit_code,
                             int64_t duration_ms);

// One line the provisioning script printed; `stream` is "stdout" or "stderr".
nlohmann::json provision_output(const std::string& container_id, const std::string& profile, const std::string& stream,
                                const std::string& line);

// One connection the network policy decided on (docs/audit-format.md, net_allow / net_deny).
struct NetRecord {
  std::string destination;  // the name asked for (or the address, when one was asked for)
  std::string address;      // the resolved address connected to, or the refused one; may be empty
  int port = 0;
  std::string policy;  // what the deciding relay enforces: inference, allowlist, open, provision, port forward
  std::string rule;    // the rule that allowed it (an allow-list entry, "open", "inference endpoint")
  std::string reason;  // net_deny: why; net_allow: how the connection ended
  uint64_t bytes_up = 0, bytes_down = 0;  // net_allow: at close
};
nlohmann::json net_allow(const std::string& container_id, const NetRecord& record);
nlohmann::json net_deny(const std::string& container_id, const NetRecord& record);
// One request through the inference gateway: the connection's fields (as net_allow's) and the
// request's `exchange` (method, path, status, models, latency, token counts: docs/audit-format.md).
nlohmann::json inference_request(const std::string& container_id, const NetRecord& record,
                                 const nlohmann::json& exchange);

// One request through a credential route (docs/audit-format.md, route_request). Never the credential.
struct RouteRecord {
  std::string route;     // the route's name as asked for
  std::string method;    // "GET"
  std::string path;      // below the route, without the query
  std::string upstream;  // host:port; empty when refused
  std::string policy;    // the sandbox's network policy
  bool allowed = false;  // false: refused by tnk (`reason` says why)
  int status = 0;        // the answer's HTTP status: the upstream's, or tnk's refusal
  std::string reason;    // refused: why; passed: how the connection ended
  uint64_t bytes_up = 0, bytes_down = 0;
  int64_t latency_ms = 0;
};
nlohmann::json route_request(const std::string& container_id, const RouteRecord& record);

// One signature the sandbox asked of an SSH route's agent (docs/audit-format.md, ssh_sign). Fingerprints of
// public keys only.
struct SshSignRecord {
  std::string host;      // the route's host:port the session was bound to; empty: none
  std::string host_key;  // SHA256 fingerprint of the host key it was bound (or tried to bind) to
  std::string identity;  // SHA256 fingerprint of the key asked to sign
  std::string policy;    // the sandbox's network policy
  bool allowed = false;
  std::string reason;  // refused: why
};
nlohmann::json ssh_sign(const std::string& container_id, const SshSignRecord& record);

// A change of a sandbox's network policy from the host (`tnk sandbox allow`, `deny`) or a rule's
// expiry (docs/audit-format.md, policy_change).
struct PolicyChangeRecord {
  std::string action;                // "allow", "deny", "expire"
  std::string rule;                  // the entry: "example.org", "*.example.org:8443"
  std::string who;                   // the host user; "tnk" for an expiry
  std::optional<std::string> until;  // the rule's expiry (ISO 8601 UTC), when it has one
  std::string old_hash, new_hash;    // of the policy in force before and after (net/live_policy.h)
  bool running = false;              // applied to the running sandbox (else recorded for its next start)
  uint64_t cut = 0;                  // connections the change cut
};
nlohmann::json policy_change(const std::string& container_id, const PolicyChangeRecord& record);

}  // namespace tnk::audit
