#include "session/messages.h"

#include <map>

namespace tnk::session {
namespace {

using nlohmann::json;

Error field_error(const char* field, const std::string& problem) {
  return failed("control message: field '" + std::string(field) + "' " + problem);
}

bool has_nul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

bool valid_env_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

// A JSON array of strings without NUL bytes.
Result<std::vector<std::string>> string_array_field(const json& body, const char* field) {
  auto it = body.find(field);
  if (it == body.end()) return field_error(field, "is missing");
  if (!it->is_array()) return field_error(field, "must be an array of strings");
  std::vector<std::string> out;
  for (const auto& item : *it) {
    if (!item.is_string()) return field_error(field, "must be an array of strings");
    auto s = item.get<std::string>();
    if (has_nul(s)) return field_error(field, "must not contain NUL bytes");
    out.push_back(std::move(s));
  }
  return out;
}

// Checks "K=V" entries and keeps one entry per name (the last value, at the first position).
Result<std::vector<std::string>> normalize_env(const std::vector<std::string>& entries) {
  std::vector<std::string> out;
  std::map<std::string, std::size_t, std::less<>> index;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string& kv = entries[i];
    auto eq = kv.find('=');
    if (eq == std::string::npos) {
      return field_error("env", "entry " + std::to_string(i) + " is not of the form NAME=VALUE");
    }
    std::string name = kv.substr(0, eq);
    if (!valid_env_name(name)) {
      return field_error("env", "entry " + std::to_string(i) + " has an invalid name '" + name + "'");
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

std::string identity_name(Identity identity) {
  switch (identity) {
    case Identity::kAgent: return "agent";
    case Identity::kRoot: return "root";
    case Identity::kProvision: return "provision";
  }
  return "agent";
}

std::optional<Identity> identity_from_name(std::string_view name) {
  if (name == "agent") return Identity::kAgent;
  if (name == "root") return Identity::kRoot;
  if (name == "provision") return Identity::kProvision;
  return std::nullopt;
}

json to_json(const ExecRequest& request) {
  return json{{"op", "exec"},
              {"v", kProtocolVersion},
              {"argv", request.argv},
              {"env", request.env},
              {"cwd", request.cwd},
              {"tty", request.tty},
              {"rows", request.rows},
              {"cols", request.cols},
              {"identity", identity_name(request.identity)},
              {"egress_allow", request.egress_allow},
              {"egress_any", request.egress_any},
              {"audit_log", request.audit_log}};
}

Result<ExecRequest> exec_request_from_json(const json& body) {
  ExecRequest r;
  TNK_ASSIGN_OR_RETURN(r.argv, string_array_field(body, "argv"));
  if (r.argv.empty() || r.argv[0].empty()) return field_error("argv", "must name a program (argv[0] is empty)");
  TNK_ASSIGN_OR_RETURN(auto env, string_array_field(body, "env"));
  TNK_ASSIGN_OR_RETURN(r.env, normalize_env(env));
  TNK_ASSIGN_OR_RETURN(r.cwd, string_field(body, "cwd"));
  if (r.cwd.empty() || r.cwd[0] != '/') return field_error("cwd", "must be an absolute path");
  TNK_ASSIGN_OR_RETURN(r.tty, bool_field(body, "tty"));
  TNK_ASSIGN_OR_RETURN(auto rows, int_field(body, "rows", 0, 65535));
  TNK_ASSIGN_OR_RETURN(auto cols, int_field(body, "cols", 0, 65535));
  r.rows = static_cast<unsigned short>(rows);
  r.cols = static_cast<unsigned short>(cols);
  TNK_ASSIGN_OR_RETURN(auto identity, string_field(body, "identity"));
  auto id = identity_from_name(identity);
  if (!id) return field_error("identity", "must be \"agent\", \"root\" or \"provision\"");
  r.identity = *id;
  if (body.contains("egress_allow")) {
    TNK_ASSIGN_OR_RETURN(r.egress_allow, string_array_field(body, "egress_allow"));
  }
  if (body.contains("egress_any")) {
    TNK_ASSIGN_OR_RETURN(r.egress_any, bool_field(body, "egress_any"));
  }
  TNK_ASSIGN_OR_RETURN(r.audit_log, optional_string_field(body, "audit_log"));
  if (!r.audit_log.empty() && r.audit_log[0] != '/') return field_error("audit_log", "must be an absolute path");
  return r;
}

Status check_version(const json& body, std::string_view peer) {
  auto it = body.find("v");
  if (it == body.end()) return field_error("v", "is missing (the protocol version of " + std::string(peer) + ")");
  if (!it->is_number_integer()) return field_error("v", "must be an integer");
  auto theirs = it->get<long long>();
  if (theirs == kProtocolVersion) return ok_status();
  return failed("control protocol version mismatch: " + std::string(peer) + " speaks version " +
                    std::to_string(theirs) + ", this tnk speaks version " + std::to_string(kProtocolVersion),
                "restart the sandbox with the same tnk (`tnk sandbox stop`, then start it again)");
}

Result<std::string> string_field(const json& body, const char* field) {
  auto it = body.find(field);
  if (it == body.end()) return field_error(field, "is missing");
  if (!it->is_string()) return field_error(field, "must be a string");
  auto s = it->get<std::string>();
  if (has_nul(s)) return field_error(field, "must not contain NUL bytes");
  return s;
}

Result<std::string> optional_string_field(const json& body, const char* field) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::string();
  return string_field(body, field);
}

Result<long long> int_field(const json& body, const char* field, long long min, long long max) {
  auto it = body.find(field);
  if (it == body.end()) return field_error(field, "is missing");
  bool in_range = false;
  if (it->is_number_unsigned()) {  // checked unsigned first: a huge value must not wrap into the range
    auto u = it->get<unsigned long long>();
    in_range = max >= 0 && u <= static_cast<unsigned long long>(max) && static_cast<long long>(u) >= min;
  } else if (it->is_number_integer()) {
    in_range = it->get<long long>() >= min && it->get<long long>() <= max;
  }
  if (!in_range) {
    return field_error(field, "must be an integer from " + std::to_string(min) + " to " + std::to_string(max));
  }
  return it->get<long long>();
}

Result<bool> bool_field(const json& body, const char* field) {
  auto it = body.find(field);
  if (it == body.end()) return field_error(field, "is missing");
  if (!it->is_boolean()) return field_error(field, "must be true or false");
  return it->get<bool>();
}

json resize_op(unsigned short rows, unsigned short cols) { return {{"op", "resize"}, {"rows", rows}, {"cols", cols}}; }
json signal_op(int signal) { return {{"op", "signal"}, {"signal", signal}}; }
json ping_op() { return {{"op", "ping"}, {"v", kProtocolVersion}}; }
json stop_op(std::chrono::milliseconds grace) {
  return {{"op", "stop"}, {"v", kProtocolVersion}, {"grace_ms", grace.count()}};
}

Result<Resize> resize_from_json(const json& body) {
  TNK_ASSIGN_OR_RETURN(auto rows, int_field(body, "rows", 0, 65535));
  TNK_ASSIGN_OR_RETURN(auto cols, int_field(body, "cols", 0, 65535));
  return Resize{static_cast<unsigned short>(rows), static_cast<unsigned short>(cols)};
}

Result<int> signal_from_json(const json& body) {
  TNK_ASSIGN_OR_RETURN(auto sig, int_field(body, "signal", 1, 64));
  return static_cast<int>(sig);
}

Result<std::chrono::milliseconds> stop_grace_from_json(const json& body) {
  TNK_ASSIGN_OR_RETURN(auto ms, int_field(body, "grace_ms", 0, 3'600'000));
  return std::chrono::milliseconds{ms};
}

json started_event(long long pid) { return {{"event", "started"}, {"v", kProtocolVersion}, {"pid", pid}}; }

json error_event(const std::string& message, const std::string& hint, int exit_code) {
  return {{"event", "error"}, {"v", kProtocolVersion}, {"message", message}, {"hint", hint}, {"exit_code", exit_code}};
}

json exit_event(int code) { return {{"event", "exit"}, {"code", code}}; }

json pong_event(const std::string& backend, long long pid) {
  return {{"event", "pong"}, {"v", kProtocolVersion}, {"backend", backend}, {"pid", pid}};
}

json stopping_event() { return {{"event", "stopping"}, {"v", kProtocolVersion}}; }

Result<RemoteError> remote_error_from_json(const json& body) {
  RemoteError e;
  TNK_ASSIGN_OR_RETURN(e.message, string_field(body, "message"));
  TNK_ASSIGN_OR_RETURN(e.hint, optional_string_field(body, "hint"));
  TNK_ASSIGN_OR_RETURN(auto code, int_field(body, "exit_code", 1, 255));
  e.exit_code = static_cast<int>(code);
  return e;
}

}  // namespace tnk::session
