#include "audit/events.h"

namespace tnk::audit {
namespace {

using nlohmann::json;

json event(const char* name, const std::string& container_id) {
  return json{{"event", name}, {"container_id", container_id}};
}

json net_event(const char* name, const std::string& container_id, const NetRecord& record) {
  json e = event(name, container_id);
  e["destination"] = record.destination;
  e["address"] = record.address;
  e["port"] = record.port;
  e["policy"] = record.policy;
  e["rule"] = record.rule;
  return e;
}

}  // namespace

json session_start(const std::string& container_id, const std::string& workdir, bool tty, bool requires_tty,
                   const RuntimeEnv& runtime_env) {
  json e = event("session_start", container_id);
  e["workdir"] = workdir;
  e["tty"] = tty;
  e["requires_tty"] = requires_tty;
  e["runtime_env"] = runtime_env;
  return e;
}

json exec_invocation(const std::string& container_id, const std::vector<std::string>& argv, bool tty,
                     const RuntimeEnv& runtime_env, const std::vector<std::string>& env_names) {
  json e = event("exec_invocation", container_id);
  e["argv"] = argv;
  e["tty"] = tty;
  e["runtime_env"] = runtime_env;
  e["user_env_names"] = env_names;
  return e;
}

json session_exit(const std::string& container_id, std::optional<int> exit_code, std::optional<int> signal,
                  const std::string& lost) {
  json e = event("session_exit", container_id);
  e["exit_code"] = exit_code ? json(*exit_code) : json(nullptr);
  if (signal) e["signal"] = *signal;
  if (!lost.empty()) e["lost"] = lost;
  return e;
}

json workspace_apply(const std::string& container_id, const std::string& project_dir, const json& paths) {
  json e = event("workspace_apply", container_id);
  e["project_dir"] = project_dir;
  e["paths"] = paths;
  return e;
}

json workspace_discard(const std::string& container_id, const std::string& project_dir, const json& paths) {
  json e = event("workspace_discard", container_id);
  e["project_dir"] = project_dir;
  e["paths"] = paths;
  return e;
}

json sandbox_checkpoint(const std::string& container_id, const std::string& action, const json& state) {
  json e = event("checkpoint", container_id);
  e["action"] = action;
  e["state"] = state;
  return e;
}

json sandbox_fork(const std::string& container_id, const std::string& fork_id, const json& state) {
  json e = event("fork", container_id);
  e["fork_id"] = fork_id;
  e["state"] = state;
  return e;
}

json sandbox_start(const std::string& container_id, const std::string& backend, const std::string& profile,
                   const std::string& project_dir) {
  json e = event("sandbox_start", container_id);
  e["backend"] = backend;
  e["profile"] = profile;
  e["project_dir"] = project_dir;
  return e;
}

json sandbox_stop(const std::string& container_id, const std::string& reason) {
  json e = event("sandbox_stop", container_id);
  e["reason"] = reason;
  return e;
}

json sandbox_delete(const std::string& container_id) { return event("sandbox_delete", container_id); }

json protected_path_appeared(const std::string& container_id, const std::string& path, const std::string& host_path) {
  json e = event("protected_path_appeared", container_id);
  e["path"] = path;
  e["host_path"] = host_path;
  return e;
}

json git_entry_held(const std::string& container_id, const std::string& path, const std::string& held_as,
                    const std::string& what) {
  json e = event("git_entry_held", container_id);
  e["path"] = path;
  e["held_as"] = held_as.empty() ? json() : json(held_as);
  e["what"] = what;
  return e;
}

json provision_start(const std::string& container_id, const std::string& profile, const std::string& fingerprint) {
  json e = event("provision_start", container_id);
  e["profile"] = profile;
  e["fingerprint"] = fingerprint;
  return e;
}

json provision_end(const std::string& container_id, const std::string& profile, int exit_code, int64_t duration_ms) {
  json e = event("provision_end", container_id);
  e["profile"] = profile;
  e["exit_code"] = exit_code;
  e["duration_ms"] = duration_ms;
  return e;
}

json provision_output(const std::string& container_id, const std::string& profile, const std::string& stream,
                      const std::string& line) {
  json e = event("provision_output", container_id);
  e["profile"] = profile;
  e["stream"] = stream;
  e["line"] = line;
  return e;
}

json net_allow(const std::string& container_id, const NetRecord& record) {
  json e = net_event("net_allow", container_id, record);
  e["end"] = record.reason;
  e["bytes_up"] = record.bytes_up;
  e["bytes_down"] = record.bytes_down;
  return e;
}

json inference_request(const std::string& container_id, const NetRecord& record, const json& exchange) {
  json e = net_allow(container_id, record);
  e["event"] = "inference_request";
  for (const auto& [key, value] : exchange.items()) {
    if (!e.contains(key)) e[key] = value;
  }
  return e;
}

json net_deny(const std::string& container_id, const NetRecord& record) {
  json e = net_event("net_deny", container_id, record);
  e["reason"] = record.reason;
  return e;
}

json route_request(const std::string& container_id, const RouteRecord& record) {
  json e = event("route_request", container_id);
  e["route"] = record.route;
  e["method"] = record.method;
  e["path"] = record.path;
  e["upstream"] = record.upstream;
  e["policy"] = record.policy;
  e["allowed"] = record.allowed;
  e["status"] = record.status;
  e[record.allowed ? "end" : "reason"] = record.reason;
  e["bytes_up"] = record.bytes_up;
  e["bytes_down"] = record.bytes_down;
  e["latency_ms"] = record.latency_ms;
  return e;
}

json ssh_sign(const std::string& container_id, const SshSignRecord& record) {
  json e = event("ssh_sign", container_id);
  e["host"] = record.host;
  e["host_key"] = record.host_key;
  e["identity"] = record.identity;
  e["policy"] = record.policy;
  e["allowed"] = record.allowed;
  if (!record.allowed) e["reason"] = record.reason;
  return e;
}

json policy_change(const std::string& container_id, const PolicyChangeRecord& record) {
  json e = event("policy_change", container_id);
  e["action"] = record.action;
  e["rule"] = record.rule;
  e["who"] = record.who;
  e["until"] = record.until ? json(*record.until) : json(nullptr);
  e["old_policy_hash"] = record.old_hash;
  e["new_policy_hash"] = record.new_hash;
  e["running"] = record.running;
  e["cut"] = record.cut;
  return e;
}

}  // namespace tnk::audit
