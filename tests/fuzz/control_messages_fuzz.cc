// libFuzzer target for the control protocol (docs/control-protocol.md): the input is one message on a
// SOCK_SEQPACKET socket pair, received by recv_message (the framing and JSON decoding both sides use),
// then given to every decoder the supervisor and the client apply to a message. An exec request that
// decodes is sent back through send_message and must decode to the same request.
// Build and run: scripts/fuzz.sh SECONDS control_messages (tests/fuzz/CMakeLists.txt builds it).
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "session/protocol.h"

namespace {

using namespace tnk::session;

// One socket pair for the whole run: [0] is the sender, [1] the receiver.
const int* socket_pair() {
  static int fds[2] = {-1, -1};
  if (fds[0] < 0 && ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) std::abort();
  return fds;
}

bool same(const ExecRequest& a, const ExecRequest& b) {
  return a.argv == b.argv && a.env == b.env && a.cwd == b.cwd && a.tty == b.tty && a.rows == b.rows &&
         a.cols == b.cols && a.identity == b.identity && a.egress_allow == b.egress_allow &&
         a.egress_any == b.egress_any && a.audit_log == b.audit_log;
}

void check_exec(const nlohmann::json& body, const int* fds) {
  auto request = exec_request_from_json(body);
  if (!request.ok()) return;
  // Invariants the supervisor's spawn relies on.
  if (request->argv.empty() || request->argv[0].empty() || request->cwd.empty() || request->cwd[0] != '/') {
    std::abort();
  }
  for (const auto& e : request->env) {
    if (e.find('=') == std::string::npos || e[0] == '=') std::abort();
  }
  nlohmann::json again = to_json(*request);
  if (!send_message(fds[0], again).ok()) {
    // Only the size limit may refuse what was received (the re-encoding adds the defaulted fields).
    if (again.dump().size() <= kMaxMessageBytes) std::abort();
    return;
  }
  auto back = recv_message(fds[1]);
  if (!back.ok() || !back->has_value()) std::abort();
  auto decoded = exec_request_from_json((*back)->body);
  if (!decoded.ok() || !same(*decoded, *request)) std::abort();
}

void decode_all(const nlohmann::json& body, const int* fds) {
  if (!body.is_object()) std::abort();
  (void)check_version(body, "the client");
  auto op = control_fields(body).optional_string("op");
  if (op.ok()) {  // a name the supervisor knows names its op again, and only that one
    auto known = control_op_from_name(*op);
    if (known && control_op_name(*known) != *op) std::abort();
  }
  (void)control_fields(body).string("event");
  check_exec(body, fds);
  (void)resize_from_json(body);
  auto sig = signal_from_json(body);
  if (sig.ok() && (*sig < 1 || *sig > 64)) std::abort();
  auto grace = stop_grace_from_json(body);
  if (grace.ok() && (grace->count() < 0 || grace->count() > 3'600'000)) std::abort();
  auto remote = remote_error_from_json(body);
  if (remote.ok() && (remote->exit_code < 1 || remote->exit_code > 255)) std::abort();
  (void)control_fields(body).integer("pid", 1, 1LL << 32);
  (void)control_fields(body).integer("code", 0, 255);
  (void)control_fields(body).integer("count", 1, 10000);
  (void)control_fields(body).integer("host_port", 0, 65535);
  (void)control_fields(body).boolean("remove");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int* fds = socket_pair();
  if (::send(fds[0], data, size, MSG_NOSIGNAL | MSG_DONTWAIT) != static_cast<ssize_t>(size)) std::abort();
  auto received = recv_message(fds[1]);
  if (!received.ok() || !received->has_value()) return 0;
  if (!(*received)->fds.empty()) std::abort();
  decode_all((*received)->body, fds);
  return 0;
}
