// The control protocol's message types (docs/control-protocol.md): the exec request, the small ops
// and events, and strict field readers that name the field at fault. Shared by client and supervisor.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_fields.h"
#include "core/result.h"

namespace tnk::session {

inline constexpr int kProtocolVersion = 1;  // the "v" of each side's first message

// Every operation a client asks of a supervisor: the "op" of a control message. kExec is the first
// message of a session; kResize and kSignal act on that session; the others are one-shot requests.
// The wire names are in one table (messages.cc), read both ways by the two functions below.
enum class ControlOp { kExec, kResize, kSignal, kPing, kStop, kNetwork, kForward, kAgentPing, kPolicy, kPause };
std::string control_op_name(ControlOp op);  // "exec", "agent-ping", ...
// nullopt for a name no version of the protocol defines; the supervisor answers it with an error.
std::optional<ControlOp> control_op_from_name(std::string_view name);

// Who the session runs as inside the sandbox.
enum class Identity { kAgent, kRoot };
std::string identity_name(Identity identity);  // "agent" | "root"
std::optional<Identity> identity_from_name(std::string_view name);

// {"op":"exec",...}: the first message of a session.
struct ExecRequest {
  std::vector<std::string> argv;  // argv[0] is looked up in the sandbox's PATH when it has no '/'
  std::vector<std::string> env;   // "K=V", the complete environment (nothing is inherited)
  std::string cwd;                // absolute, inside the sandbox
  bool tty = false;
  unsigned short rows = 24, cols = 80;
  Identity identity = Identity::kAgent;
  // A phase of provisioning (its root phase or its agent phase): the project read-only, a PATH of system
  // directories only, and the provisioning proxy with these rules.
  bool provisioning = false;
  std::vector<std::string> egress_allow;  // provisioning: the domains its egress proxy lets through
  bool egress_any = false;                // provisioning under `network.provision: open`: any name
  std::string audit_log;                  // the client's audit log (absolute), for the network records
};
nlohmann::json to_json(const ExecRequest& request);  // includes "op":"exec" and "v"
// Validates: argv a non-empty array of strings with a non-empty argv[0]; env entries "K=V" with K a valid
// name ([A-Za-z_][A-Za-z0-9_]*); cwd absolute; no NUL byte anywhere; tty bool; rows/cols 0..65535;
// identity known. A name that repeats in env keeps its last value (the result has each name once).
Result<ExecRequest> exec_request_from_json(const nlohmann::json& body);

// The version check on each side's first message: missing "v" or another number is an error naming
// both versions. `peer` names the other side in the message ("the supervisor", "the client").
Status check_version(const nlohmann::json& body, std::string_view peer);

// The fields of a control message (core/json_fields.h): errors read "control message: field 'x' is
// missing" / "... must be ...". `body` must outlive the reader.
JsonFields control_fields(const nlohmann::json& body);

// Client -> supervisor.
nlohmann::json resize_op(unsigned short rows, unsigned short cols);
nlohmann::json signal_op(int signal);
nlohmann::json ping_op();
nlohmann::json stop_op(std::chrono::milliseconds grace);

struct Resize {
  unsigned short rows = 0, cols = 0;
};
Result<Resize> resize_from_json(const nlohmann::json& body);
Result<int> signal_from_json(const nlohmann::json& body);  // 1..64
Result<std::chrono::milliseconds> stop_grace_from_json(const nlohmann::json& body);

// Supervisor -> client.
inline constexpr int kExitCommandNotFound = 127;
inline constexpr int kExitCommandNotExecutable = 126;
nlohmann::json started_event(long long pid);
nlohmann::json error_event(const std::string& message, const std::string& hint, int exit_code);
// `stopped`: the session ended because its sandbox was stopped (stop, delete, shutdown), not by itself.
nlohmann::json exit_event(int code, bool stopped = false, const std::string& note = "");
nlohmann::json pong_event(const std::string& backend, long long pid);
nlohmann::json stopping_event();

// An {"event":"error"} as a value: what the supervisor said and the exit code the CLI must use.
struct RemoteError {
  std::string message, hint;
  int exit_code = 1;
};
Result<RemoteError> remote_error_from_json(const nlohmann::json& body);

}  // namespace tnk::session
