#include "agent/messages.h"

#include <optional>

#include <nlohmann/json.hpp>

namespace tnk::agent {
namespace {

using nlohmann::json;

constexpr int kMaxDepth = 4;  // the deepest message is an object holding arrays of scalars

struct TooDeep {};

// Parses a payload as one JSON object, refusing deep nesting before it is built.
Result<json> parse_object(std::string_view payload, const char* what) {
  json body;
  try {
    json::parser_callback_t limit = [](int depth, json::parse_event_t, json&) {
      if (depth > kMaxDepth) throw TooDeep{};
      return true;
    };
    body = json::parse(payload.begin(), payload.end(), limit);
  } catch (const json::exception& e) {
    return failed(std::string("agent message ") + what + " is not valid JSON: " + e.what());
  } catch (const TooDeep&) {
    return failed(std::string("agent message ") + what + " is nested too deeply");
  }
  if (!body.is_object()) return failed(std::string("agent message ") + what + " is not a JSON object");
  return body;
}

Error field_error(const char* what, const char* field, const std::string& problem) {
  return failed(std::string("agent message ") + what + ": field '" + field + "' " + problem);
}

bool has_nul(const std::string& s) { return s.find('\0') != std::string::npos; }

Result<std::string> str(const json& body, const char* what, const char* field, bool required = true) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) {
    if (required) return field_error(what, field, "is missing");
    return std::string();
  }
  if (!it->is_string()) return field_error(what, field, "must be a string");
  std::string value = it->get<std::string>();
  if (has_nul(value)) return field_error(what, field, "must not contain a NUL byte");
  return value;
}

Result<long long> integer(const json& body, const char* what, const char* field, long long min, long long max,
                          std::optional<long long> fallback = std::nullopt) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) {
    if (fallback) return *fallback;
    return field_error(what, field, "is missing");
  }
  if (!it->is_number_integer()) return field_error(what, field, "must be an integer");
  long long v = it->is_number_unsigned() && it->get<unsigned long long>() > static_cast<unsigned long long>(max)
                    ? max + 1
                    : it->get<long long>();
  if (v < min || v > max) {
    return field_error(what, field, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  }
  return v;
}

Result<bool> boolean(const json& body, const char* what, const char* field, bool fallback) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return field_error(what, field, "must be true or false");
  return it->get<bool>();
}

Result<std::vector<std::string>> strings(const json& body, const char* what, const char* field) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::vector<std::string>{};
  if (!it->is_array()) return field_error(what, field, "must be an array of strings");
  std::vector<std::string> out;
  for (const auto& e : *it) {
    if (!e.is_string()) return field_error(what, field, "must be an array of strings");
    out.push_back(e.get<std::string>());
    if (has_nul(out.back())) return field_error(what, field, "must not contain a NUL byte");
  }
  return out;
}

Result<std::string> absolute_path(const json& body, const char* what, const char* field) {
  TNK_ASSIGN_OR_RETURN(std::string p, str(body, what, field));
  if (p.empty() || p.front() != '/') return field_error(what, field, "must be an absolute path");
  return p;
}

uint32_t u32(long long v) { return static_cast<uint32_t>(v); }

// Text fields the agent or the OS made up (error messages) may hold any bytes: replace what is not UTF-8.
std::string dump(const json& body) { return body.dump(-1, ' ', false, json::error_handler_t::replace); }

// Fields the user gave (argv, env, paths) must arrive exactly or not at all.
Result<std::string> dump_exact(const json& body, const char* what) {
  try {
    return body.dump();
  } catch (const json::exception&) {
    return failed(std::string("agent message ") + what + ": a string is not valid UTF-8",
                  "the agent protocol carries arguments, environment and paths as UTF-8 text");
  }
}

}  // namespace

std::string encode_hello(const Hello& hello) { return dump(json{{"version", hello.version}, {"token", hello.token}}); }

Result<Hello> parse_hello(std::string_view payload) {
  TNK_ASSIGN_OR_RETURN(json body, parse_object(payload, "hello"));
  Hello hello;
  TNK_ASSIGN_OR_RETURN(long long version, integer(body, "hello", "version", 0, 255));
  hello.version = static_cast<int>(version);
  TNK_ASSIGN_OR_RETURN(hello.token, str(body, "hello", "token"));
  if (hello.token.size() > kMaxTokenBytes) return field_error("hello", "token", "is too long");
  return hello;
}

std::string encode_hello_ok(const HelloOk& ok) { return dump(json{{"version", ok.version}, {"agent", ok.agent}}); }

Result<HelloOk> parse_hello_ok(std::string_view payload) {
  TNK_ASSIGN_OR_RETURN(json body, parse_object(payload, "hello-ok"));
  HelloOk ok;
  TNK_ASSIGN_OR_RETURN(long long version, integer(body, "hello-ok", "version", 0, 255));
  ok.version = static_cast<int>(version);
  TNK_ASSIGN_OR_RETURN(ok.agent, str(body, "hello-ok", "agent", false));
  return ok;
}

Result<std::string> encode_exec(const ExecRequest& r) {
  return dump_exact(json{{"argv", r.argv},
                         {"env", r.env},
                         {"cwd", r.cwd},
                         {"uid", r.uid},
                         {"gid", r.gid},
                         {"groups", r.groups},
                         {"tty", r.tty},
                         {"rows", r.rows},
                         {"cols", r.cols}},
                    "exec");
}

Result<ExecRequest> parse_exec(std::string_view payload) {
  const char* what = "exec";
  TNK_ASSIGN_OR_RETURN(json body, parse_object(payload, what));
  ExecRequest r;
  TNK_ASSIGN_OR_RETURN(r.argv, strings(body, what, "argv"));
  if (r.argv.empty() || r.argv[0].empty()) return field_error(what, "argv", "must name a program");
  TNK_ASSIGN_OR_RETURN(r.env, strings(body, what, "env"));
  for (const auto& e : r.env) {
    auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0) return field_error(what, "env", "entries must be NAME=VALUE");
  }
  TNK_ASSIGN_OR_RETURN(r.cwd, absolute_path(body, what, "cwd"));
  TNK_ASSIGN_OR_RETURN(long long uid, integer(body, what, "uid", 0, kMaxId));
  TNK_ASSIGN_OR_RETURN(long long gid, integer(body, what, "gid", 0, kMaxId));
  r.uid = u32(uid);
  r.gid = u32(gid);
  auto groups = body.find("groups");
  if (groups != body.end() && !groups->is_null()) {
    if (!groups->is_array()) return field_error(what, "groups", "must be an array of group ids");
    for (const auto& g : *groups) {
      if (!g.is_number_unsigned() || g.get<unsigned long long>() > kMaxId) {
        return field_error(what, "groups", "must be an array of group ids");
      }
      r.groups.push_back(static_cast<uint32_t>(g.get<unsigned long long>()));
    }
  }
  TNK_ASSIGN_OR_RETURN(r.tty, boolean(body, what, "tty", false));
  TNK_ASSIGN_OR_RETURN(long long rows, integer(body, what, "rows", 0, 65535, 24));
  TNK_ASSIGN_OR_RETURN(long long cols, integer(body, what, "cols", 0, 65535, 80));
  r.rows = static_cast<uint16_t>(rows);
  r.cols = static_cast<uint16_t>(cols);
  return r;
}

std::string encode_started(const Started& started) { return dump(json{{"pid", started.pid}}); }

Result<Started> parse_started(std::string_view payload) {
  TNK_ASSIGN_OR_RETURN(json body, parse_object(payload, "started"));
  TNK_ASSIGN_OR_RETURN(long long pid, integer(body, "started", "pid", 1, 1ll << 32));
  return Started{pid};
}

std::string encode_resize(const WindowSize& size) { return dump(json{{"rows", size.rows}, {"cols", size.cols}}); }

Result<WindowSize> parse_resize(std::string_view payload) {
  TNK_ASSIGN_OR_RETURN(json body, parse_object(payload, "resize"));
  TNK_ASSIGN_OR_RETURN(long long rows, integer(body, "resize", "rows", 0, 65535));
  TNK_ASSIGN_OR_RETURN(long long cols, integer(body, "resize", "cols", 0, 65535));
  return WindowSize{static_cast<uint16_t>(rows), static_cast<uint16_t>(cols)};
}

std::string encode_signal(int signal) { return dump(json{{"signal", signal}}); }

Result<int> parse_signal(std::string_view payload) {
  TNK_ASSIGN_OR_RETURN(json body, parse_object(payload, "signal"));
  TNK_ASSIGN_OR_RETURN(long long sig, integer(body, "signal", "signal", 1, 64));
  return static_cast<int>(sig);
}

std::string encode_exit(const ExitInfo& exit) {
  json body{{"code", exit.code}};
  if (exit.signal != 0) body["signal"] = exit.signal;
  if (!exit.error.empty()) body["error"] = exit.error;
  return dump(body);
}

Result<ExitInfo> parse_exit(std::string_view payload) {
  TNK_ASSIGN_OR_RETURN(json body, parse_object(payload, "exit"));
  ExitInfo exit;
  TNK_ASSIGN_OR_RETURN(long long code, integer(body, "exit", "code", 0, 255));
  TNK_ASSIGN_OR_RETURN(long long sig, integer(body, "exit", "signal", 0, 64, 0));
  exit.code = static_cast<int>(code);
  exit.signal = static_cast<int>(sig);
  TNK_ASSIGN_OR_RETURN(exit.error, str(body, "exit", "error", false));
  return exit;
}

std::string encode_error(const ErrorInfo& error) {
  return dump(json{{"message", error.message}, {"fatal", error.fatal}});
}

Result<ErrorInfo> parse_error(std::string_view payload) {
  TNK_ASSIGN_OR_RETURN(json body, parse_object(payload, "error"));
  ErrorInfo error;
  TNK_ASSIGN_OR_RETURN(error.message, str(body, "error", "message"));
  TNK_ASSIGN_OR_RETURN(error.fatal, boolean(body, "error", "fatal", false));
  return error;
}

std::string encode_ack(uint32_t bytes) { return dump(json{{"bytes", bytes}}); }

Result<uint32_t> parse_ack(std::string_view payload) {
  TNK_ASSIGN_OR_RETURN(json body, parse_object(payload, "ack"));
  TNK_ASSIGN_OR_RETURN(long long bytes, integer(body, "ack", "bytes", 1, kMaxAckBytes));
  return u32(bytes);
}

Result<std::string> encode_file_put(const FilePut& put) {
  return dump_exact(
      json{{"path", put.path}, {"mode", put.mode}, {"uid", put.uid}, {"gid", put.gid}, {"parents", put.parents}},
      "file-put");
}

Result<FilePut> parse_file_put(std::string_view payload) {
  const char* what = "file-put";
  TNK_ASSIGN_OR_RETURN(json body, parse_object(payload, what));
  FilePut put;
  TNK_ASSIGN_OR_RETURN(put.path, absolute_path(body, what, "path"));
  if (put.path.back() == '/') return field_error(what, "path", "must name a file, not a directory");
  TNK_ASSIGN_OR_RETURN(long long mode, integer(body, what, "mode", 0, 07777, 0644));
  TNK_ASSIGN_OR_RETURN(long long uid, integer(body, what, "uid", 0, kMaxId, 0));
  TNK_ASSIGN_OR_RETURN(long long gid, integer(body, what, "gid", 0, kMaxId, 0));
  put.mode = u32(mode);
  put.uid = u32(uid);
  put.gid = u32(gid);
  TNK_ASSIGN_OR_RETURN(put.parents, boolean(body, what, "parents", false));
  return put;
}

}  // namespace tnk::agent
