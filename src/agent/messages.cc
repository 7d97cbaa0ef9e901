#include "agent/messages.h"

#include <nlohmann/json.hpp>

#include "core/json_fields.h"

namespace tnk::agent {
namespace {

using nlohmann::json;

constexpr int kMaxDepth = 4;  // containers inside one another; the deepest message has 2 (an object of arrays)

// Builds the document as json::parse does, without throwing: a syntax error is kept as text, and a
// container opened past kMaxDepth stops the parse before it is built. Payloads come from the other side
// of the protocol (and from the fuzzers, mostly invalid), and a throw per bad payload was about a fifth
// of the agent_frame fuzzer's time.
class BoundedParser : public nlohmann::detail::json_sax_dom_parser<json> {
 public:
  explicit BoundedParser(json& result) : json_sax_dom_parser(result, /*allow_exceptions=*/false) {}

  bool start_object(std::size_t n) { return open() && json_sax_dom_parser::start_object(n); }
  bool start_array(std::size_t n) { return open() && json_sax_dom_parser::start_array(n); }
  bool end_object() {
    --depth_;
    return json_sax_dom_parser::end_object();
  }
  bool end_array() {
    --depth_;
    return json_sax_dom_parser::end_array();
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    error_ = e.what();
    return false;
  }

  // Only a container past the bound stops the parse with depth_ left above it.
  bool too_deep() const { return depth_ > kMaxDepth; }
  const std::string& error() const { return error_; }

 private:
  bool open() { return ++depth_ <= kMaxDepth; }

  int depth_ = 0;
  std::string error_;
};

// Parses a payload as one JSON object, refusing deep nesting before it is built.
Result<json> parse_object(std::string_view payload, const char* what) {
  json body;
  BoundedParser parser(body);
  if (!json::sax_parse(payload.begin(), payload.end(), &parser)) {
    if (parser.too_deep()) return failed(std::string("agent message ") + what + " is nested too deeply");
    return failed(std::string("agent message ") + what + " is not valid JSON: " + parser.error());
  }
  if (!body.is_object()) return failed(std::string("agent message ") + what + " is not a JSON object");
  return body;
}

JsonFields fields_of(const json& body, const char* what) {
  return JsonFields(body, std::string("agent message ") + what);
}

Result<std::string> absolute_path(const JsonFields& f, const char* field) {
  TNK_ASSIGN_OR_RETURN(std::string p, f.string(field));
  if (p.empty() || p.front() != '/') return f.error(field, "must be an absolute path");
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
  JsonFields f = fields_of(body, "hello");
  Hello hello;
  TNK_ASSIGN_OR_RETURN(long long version, f.integer("version", 0, 255));
  hello.version = static_cast<int>(version);
  TNK_ASSIGN_OR_RETURN(hello.token, f.string("token"));
  if (hello.token.size() > kMaxTokenBytes) return f.error("token", "is too long");
  return hello;
}

std::string encode_hello_ok(const HelloOk& ok) { return dump(json{{"version", ok.version}, {"agent", ok.agent}}); }

Result<HelloOk> parse_hello_ok(std::string_view payload) {
  TNK_ASSIGN_OR_RETURN(json body, parse_object(payload, "hello-ok"));
  JsonFields f = fields_of(body, "hello-ok");
  HelloOk ok;
  TNK_ASSIGN_OR_RETURN(long long version, f.integer("version", 0, 255));
  ok.version = static_cast<int>(version);
  TNK_ASSIGN_OR_RETURN(ok.agent, f.optional_string("agent"));
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
                         {"cols", r.cols},
                         {"confined", r.confined},
                         {"readonly_mount", r.readonly_mount}},
                    "exec");
}

Result<ExecRequest> parse_exec(std::string_view payload) {
  TNK_ASSIGN_OR_RETURN(json body, parse_object(payload, "exec"));
  JsonFields f = fields_of(body, "exec");
  ExecRequest r;
  TNK_ASSIGN_OR_RETURN(r.argv, f.optional_strings("argv"));
  if (r.argv.empty() || r.argv[0].empty()) return f.error("argv", "must name a program");
  TNK_ASSIGN_OR_RETURN(r.env, f.optional_strings("env"));
  for (const auto& e : r.env) {
    auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0) return f.error("env", "entries must be NAME=VALUE");
  }
  TNK_ASSIGN_OR_RETURN(r.cwd, absolute_path(f, "cwd"));
  TNK_ASSIGN_OR_RETURN(long long uid, f.integer("uid", 0, kMaxId));
  TNK_ASSIGN_OR_RETURN(long long gid, f.integer("gid", 0, kMaxId));
  r.uid = u32(uid);
  r.gid = u32(gid);
  if (f.has("groups")) {
    const json& groups = body["groups"];
    if (!groups.is_array()) return f.error("groups", "must be an array of group ids");
    for (const auto& g : groups) {
      if (!g.is_number_unsigned() || g.get<unsigned long long>() > kMaxId) {
        return f.error("groups", "must be an array of group ids");
      }
      r.groups.push_back(static_cast<uint32_t>(g.get<unsigned long long>()));
    }
  }
  TNK_ASSIGN_OR_RETURN(r.tty, f.optional_boolean("tty", false));
  TNK_ASSIGN_OR_RETURN(long long rows, f.optional_integer("rows", 24, 0, 65535));
  TNK_ASSIGN_OR_RETURN(long long cols, f.optional_integer("cols", 80, 0, 65535));
  r.rows = static_cast<uint16_t>(rows);
  r.cols = static_cast<uint16_t>(cols);
  TNK_ASSIGN_OR_RETURN(r.confined, f.optional_boolean("confined", false));
  TNK_ASSIGN_OR_RETURN(r.readonly_mount, f.optional_string("readonly_mount"));
  if (!r.readonly_mount.empty() && r.readonly_mount[0] != '/') return f.error("readonly_mount", "must be absolute");
  return r;
}

std::string encode_started(const Started& started) { return dump(json{{"pid", started.pid}}); }

Result<Started> parse_started(std::string_view payload) {
  TNK_ASSIGN_OR_RETURN(json body, parse_object(payload, "started"));
  TNK_ASSIGN_OR_RETURN(long long pid, fields_of(body, "started").integer("pid", 1, 1ll << 32));
  return Started{pid};
}

std::string encode_clock(int64_t unix_ns) { return dump(json{{"unix_ns", unix_ns}}); }

Result<int64_t> parse_clock(std::string_view payload) {
  TNK_ASSIGN_OR_RETURN(json body, parse_object(payload, "clock"));
  TNK_ASSIGN_OR_RETURN(long long ns, fields_of(body, "clock").integer("unix_ns", 0));
  return static_cast<int64_t>(ns);
}

std::string encode_resize(const WindowSize& size) { return dump(json{{"rows", size.rows}, {"cols", size.cols}}); }

Result<WindowSize> parse_resize(std::string_view payload) {
  TNK_ASSIGN_OR_RETURN(json body, parse_object(payload, "resize"));
  JsonFields f = fields_of(body, "resize");
  TNK_ASSIGN_OR_RETURN(long long rows, f.integer("rows", 0, 65535));
  TNK_ASSIGN_OR_RETURN(long long cols, f.integer("cols", 0, 65535));
  return WindowSize{static_cast<uint16_t>(rows), static_cast<uint16_t>(cols)};
}

std::string encode_signal(int signal) { return dump(json{{"signal", signal}}); }

Result<int> parse_signal(std::string_view payload) {
  TNK_ASSIGN_OR_RETURN(json body, parse_object(payload, "signal"));
  TNK_ASSIGN_OR_RETURN(long long sig, fields_of(body, "signal").integer("signal", 1, 64));
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
  JsonFields f = fields_of(body, "exit");
  ExitInfo exit;
  TNK_ASSIGN_OR_RETURN(long long code, f.integer("code", 0, 255));
  TNK_ASSIGN_OR_RETURN(long long sig, f.optional_integer("signal", 0, 0, 64));
  exit.code = static_cast<int>(code);
  exit.signal = static_cast<int>(sig);
  TNK_ASSIGN_OR_RETURN(exit.error, f.optional_string("error"));
  return exit;
}

std::string encode_error(const ErrorInfo& error) {
  return dump(json{{"message", error.message}, {"fatal", error.fatal}});
}

Result<ErrorInfo> parse_error(std::string_view payload) {
  TNK_ASSIGN_OR_RETURN(json body, parse_object(payload, "error"));
  JsonFields f = fields_of(body, "error");
  ErrorInfo error;
  TNK_ASSIGN_OR_RETURN(error.message, f.string("message"));
  TNK_ASSIGN_OR_RETURN(error.fatal, f.optional_boolean("fatal", false));
  return error;
}

std::string encode_ack(uint32_t bytes) { return dump(json{{"bytes", bytes}}); }

Result<uint32_t> parse_ack(std::string_view payload) {
  TNK_ASSIGN_OR_RETURN(json body, parse_object(payload, "ack"));
  TNK_ASSIGN_OR_RETURN(long long bytes, fields_of(body, "ack").integer("bytes", 1, kMaxAckBytes));
  return u32(bytes);
}

Result<std::string> encode_file_put(const FilePut& put) {
  return dump_exact(
      json{{"path", put.path}, {"mode", put.mode}, {"uid", put.uid}, {"gid", put.gid}, {"parents", put.parents}},
      "file-put");
}

Result<FilePut> parse_file_put(std::string_view payload) {
  TNK_ASSIGN_OR_RETURN(json body, parse_object(payload, "file-put"));
  JsonFields f = fields_of(body, "file-put");
  FilePut put;
  TNK_ASSIGN_OR_RETURN(put.path, absolute_path(f, "path"));
  if (put.path.back() == '/') return f.error("path", "must name a file, not a directory");
  TNK_ASSIGN_OR_RETURN(long long mode, f.optional_integer("mode", 0644, 0, 07777));
  TNK_ASSIGN_OR_RETURN(long long uid, f.optional_integer("uid", 0, 0, kMaxId));
  TNK_ASSIGN_OR_RETURN(long long gid, f.optional_integer("gid", 0, 0, kMaxId));
  put.mode = u32(mode);
  put.uid = u32(uid);
  put.gid = u32(gid);
  TNK_ASSIGN_OR_RETURN(put.parents, f.optional_boolean("parents", false));
  return put;
}

}  // namespace tnk::agent
