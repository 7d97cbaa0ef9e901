#include "session/control_client.h"

#include <cerrno>

#include "session/protocol.h"

namespace tnk::session {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

Error no_answer(const std::filesystem::path& sock, std::chrono::milliseconds timeout, const char* what) {
  return failed("the sandbox's supervisor on " + sock.string() + " did not " + what + " within " +
                    std::to_string(timeout.count()) + " ms",
                "it may be hung; its pid is in supervisor.pid next to the socket");
}

// Waits for the answer to a request: `expected`, or an error event (returned as an Error).
Result<json> expect_event(int fd, Clock::time_point deadline, const std::string& expected) {
  TNK_ASSIGN_OR_RETURN(std::optional<Message> m, recv_message_until(fd, deadline));
  if (!m) return failed("the sandbox's supervisor closed the connection without answering");
  TNK_RETURN_IF_ERROR(check_version(m->body, "the supervisor"));
  TNK_ASSIGN_OR_RETURN(std::string event, string_field(m->body, "event"));
  if (event == "error") {
    TNK_ASSIGN_OR_RETURN(RemoteError e, remote_error_from_json(m->body));
    return failed(e.message, e.hint);
  }
  if (event != expected) {
    return failed("the sandbox's supervisor answered '" + event + "', expected '" + expected + "'");
  }
  return std::move(m->body);
}

bool timed_out(const Error& e) { return e.sys_errno == ETIMEDOUT; }

}  // namespace

Result<json> ping(const std::filesystem::path& ctl_sock, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  TNK_ASSIGN_OR_RETURN(UniqueFd fd, connect_control(ctl_sock, timeout));
  TNK_RETURN_IF_ERROR(send_message(fd.get(), ping_op()));
  auto pong = expect_event(fd.get(), deadline, "pong");
  if (!pong.ok()) return timed_out(pong.error()) ? no_answer(ctl_sock, timeout, "answer") : pong.error();
  TNK_RETURN_IF_ERROR(string_field(*pong, "backend"));
  TNK_RETURN_IF_ERROR(int_field(*pong, "pid", 1, 1LL << 32));
  return std::move(pong).value();
}

Status request_stop(const std::filesystem::path& ctl_sock, std::chrono::milliseconds grace,
                    std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  TNK_ASSIGN_OR_RETURN(UniqueFd fd, connect_control(ctl_sock, timeout));
  TNK_RETURN_IF_ERROR(send_message(fd.get(), stop_op(grace)));
  auto stopping = expect_event(fd.get(), deadline, "stopping");
  if (!stopping.ok()) return timed_out(stopping.error()) ? no_answer(ctl_sock, timeout, "answer") : stopping.error();
  for (;;) {  // the supervisor closes the connection once the sandbox is stopped
    auto m = recv_message_until(fd.get(), deadline);
    if (!m.ok()) return timed_out(m.error()) ? no_answer(ctl_sock, timeout, "stop the sandbox") : m.error();
    if (!*m) return ok_status();
  }
}

}  // namespace tnk::session
