#include "session/messages.h"

#include <map>
#include <utility>

namespace tnk::session {
namespace {

using nlohmann::json;

// The wire names of the ops: what old and new tnk and their supervisors agree on, never to be renamed.
constexpr std::pair<ControlOp, std::string_view> kControlOpNames[] = {
    {ControlOp::kExec, "exec"},       {ControlOp::kResize, "resize"},
    {ControlOp::kSignal, "signal"},   {ControlOp::kPing, "ping"},
    {ControlOp::kStop, "stop"},       {ControlOp::kNetwork, "network"},
    {ControlOp::kForward, "forward"}, {ControlOp::kAgentPing, "agent-ping"},
    {ControlOp::kPolicy, "policy"},   {ControlOp::kPause, "pause"},
};

bool valid_env_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

// Checks "K=V" entries and keeps one entry per name (the last value, at the first position).
Result<std::vector<std::string>> normalize_env(const JsonFields& f, const std::vector<std::string>& entries) {
  std::vector<std::string> out;
  std::map<std::string, std::size_t, std::less<>> index;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string& kv = entries[i];
    auto eq = kv.find('=');
    if (eq == std::string::npos) {
      return f.error("env", "entry " + std::to_string(i) + " is not of the form NAME=VALUE");
    }
    std::string name = kv.substr(0, eq);
    if (!valid_env_name(name)) {
      return f.error("env", "entry " + std::to_string(i) + " has an invalid name '" + name + "'");
    }
    auto [it, inserted] = index.try_emplace(name, out.size());
    if (inserted) {
      out.push_back(kv);
    } else {
      out[it->second] = kv;
    }
  }
  return out;
}

}  // namespace

std::string control_op_name(ControlOp op) {
  for (const auto& [known, name] : kControlOpNames) {
    if (known == op) return std::string(name);
  }
  return "op " + std::to_string(static_cast<int>(op));  // only a value cast from outside the enum
}

std::optional<ControlOp> control_op_from_name(std::string_view name) {
  for (const auto& [op, known] : kControlOpNames) {
    if (known == name) return op;
  }
  return std::nullopt;
}

std::string identity_name(Identity identity) {
  switch (identity) {
    case Identity::kAgent: return "agent";
    case Identity::kRoot: return "root";
  }
  return "agent";
}

std::optional<Identity> identity_from_name(std::string_view name) {
  if (name == "agent") return Identity::kAgent;
  if (name == "root") return Identity::kRoot;
  return std::nullopt;
}

json to_json(const ExecRequest& request) {
  return json{{"op", control_op_name(ControlOp::kExec)},
              {"v", kProtocolVersion},
              {"argv", request.argv},
              {"env", request.env},
              {"cwd", request.cwd},
              {"tty", request.tty},
              {"rows", request.rows},
              {"cols", request.cols},
              {"identity", identity_name(request.identity)},
              {"provisioning", request.provisioning},
              {"egress_allow", request.egress_allow},
              {"egress_any", request.egress_any},
              {"audit_log", request.audit_log}};
}

Result<ExecRequest> exec_request_from_json(const json& body) {
  JsonFields f = control_fields(body);
  ExecRequest r;
  TNK_ASSIGN_OR_RETURN(r.argv, f.strings("argv"));
  if (r.argv.empty() || r.argv[0].empty()) return f.error("argv", "must name a program (argv[0] is empty)");
  TNK_ASSIGN_OR_RETURN(auto env, f.strings("env"));
  TNK_ASSIGN_OR_RETURN(r.env, normalize_env(f, env));
  TNK_ASSIGN_OR_RETURN(r.cwd, f.string("cwd"));
  if (r.cwd.empty() || r.cwd[0] != '/') return f.error("cwd", "must be an absolute path");
  TNK_ASSIGN_OR_RETURN(r.tty, f.boolean("tty"));
  TNK_ASSIGN_OR_RETURN(auto rows, f.integer("rows", 0, 65535));
  TNK_ASSIGN_OR_RETURN(auto cols, f.integer("cols", 0, 65535));
  r.rows = static_cast<unsigned short>(rows);
  r.cols = static_cast<unsigned short>(cols);
  TNK_ASSIGN_OR_RETURN(auto identity, f.string("identity"));
  auto id = identity_from_name(identity);
  if (!id) return f.error("identity", "must be \"agent\" or \"root\"");
  r.identity = *id;
  TNK_ASSIGN_OR_RETURN(r.provisioning, f.optional_boolean("provisioning", false));
  TNK_ASSIGN_OR_RETURN(r.egress_allow, f.optional_strings("egress_allow"));
  TNK_ASSIGN_OR_RETURN(r.egress_any, f.optional_boolean("egress_any", false));
  TNK_ASSIGN_OR_RETURN(r.audit_log, f.optional_string("audit_log"));
  if (!r.audit_log.empty() && r.audit_log[0] != '/') return f.error("audit_log", "must be an absolute path");
  return r;
}

JsonFields control_fields(const json& body) { return JsonFields(body, "control message"); }

Status check_version(const json& body, std::string_view peer) {
  JsonFields f = control_fields(body);
  if (!f.has("v")) return f.error("v", "is missing (the protocol version of " + std::string(peer) + ")");
  TNK_ASSIGN_OR_RETURN(long long theirs, f.integer("v"));
  if (theirs == kProtocolVersion) return ok_status();
  return failed("control protocol version mismatch: " + std::string(peer) + " speaks version " +
                    std::to_string(theirs) + ", this tnk speaks version " + std::to_string(kProtocolVersion),
                "restart the sandbox with the same tnk (`tnk sandbox stop`, then start it again)");
}

json resize_op(unsigned short rows, unsigned short cols) {
  return {{"op", control_op_name(ControlOp::kResize)}, {"rows", rows}, {"cols", cols}};
}
json signal_op(int signal) { return {{"op", control_op_name(ControlOp::kSignal)}, {"signal", signal}}; }
json ping_op() { return {{"op", control_op_name(ControlOp::kPing)}, {"v", kProtocolVersion}}; }
json stop_op(std::chrono::milliseconds grace) {
  return {{"op", control_op_name(ControlOp::kStop)}, {"v", kProtocolVersion}, {"grace_ms", grace.count()}};
}

Result<Resize> resize_from_json(const json& body) {
  JsonFields f = control_fields(body);
  TNK_ASSIGN_OR_RETURN(auto rows, f.integer("rows", 0, 65535));
  TNK_ASSIGN_OR_RETURN(auto cols, f.integer("cols", 0, 65535));
  return Resize{static_cast<unsigned short>(rows), static_cast<unsigned short>(cols)};
}

Result<int> signal_from_json(const json& body) {
  TNK_ASSIGN_OR_RETURN(auto sig, control_fields(body).integer("signal", 1, 64));
  return static_cast<int>(sig);
}

Result<std::chrono::milliseconds> stop_grace_from_json(const json& body) {
  TNK_ASSIGN_OR_RETURN(auto ms, control_fields(body).integer("grace_ms", 0, 3'600'000));
  return std::chrono::milliseconds{ms};
}

json started_event(long long pid) { return {{"event", "started"}, {"v", kProtocolVersion}, {"pid", pid}}; }

json error_event(const std::string& message, const std::string& hint, int exit_code) {
  return {{"event", "error"}, {"v", kProtocolVersion}, {"message", message}, {"hint", hint}, {"exit_code", exit_code}};
}

json exit_event(int code, bool stopped, const std::string& note) {
  json event = {{"event", "exit"}, {"code", code}};
  if (stopped) event["stopped"] = true;
  if (!note.empty()) event["note"] = note;
  return event;
}

json pong_event(const std::string& backend, long long pid) {
  return {{"event", "pong"}, {"v", kProtocolVersion}, {"backend", backend}, {"pid", pid}};
}

json stopping_event() { return {{"event", "stopping"}, {"v", kProtocolVersion}}; }

Result<RemoteError> remote_error_from_json(const json& body) {
  JsonFields f = control_fields(body);
  RemoteError e;
  TNK_ASSIGN_OR_RETURN(e.message, f.string("message"));
  TNK_ASSIGN_OR_RETURN(e.hint, f.optional_string("hint"));
  TNK_ASSIGN_OR_RETURN(auto code, f.integer("exit_code", 1, 255));
  e.exit_code = static_cast<int>(code);
  return e;
}

}  // namespace tnk::session
