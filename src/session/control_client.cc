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
  TNK_ASSIGN_OR_RETURN(std::string event, control_fields(m->body).string("event"));
  if (event == "error") {
    TNK_ASSIGN_OR_RETURN(RemoteError e, remote_error_from_json(m->body));
    switch (e.exit_code) {  // the supervisor's exit code says which kind of error it was
      case kExitUsage: return usage_error(e.message, e.hint);
      case kExitNotFound: return not_found(e.message, e.hint);
      case kExitPermission: return permission_denied(e.message, e.hint);
      default: return failed(e.message, e.hint);
    }
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
  TNK_RETURN_IF_ERROR(control_fields(*pong).string("backend"));
  TNK_RETURN_IF_ERROR(control_fields(*pong).integer("pid", 1, 1LL << 32));
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

json network_op(bool ask_proxy) { return {{"op", control_op_name(ControlOp::kNetwork)}, {"ask_proxy", ask_proxy}}; }
json forward_op(uint16_t host_port, uint16_t guest_port) {
  return {{"op", control_op_name(ControlOp::kForward)}, {"host_port", host_port}, {"guest_port", guest_port}};
}
json unforward_op(uint16_t host_port) {
  return {{"op", control_op_name(ControlOp::kForward)}, {"host_port", host_port}, {"remove", true}};
}

namespace {

// Sends `op` and returns the object under `event`'s key of the same name: {"event":"network","network":{...}}.
Result<json> request_description(const std::filesystem::path& ctl_sock, const json& op, const char* event,
                                 std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  TNK_ASSIGN_OR_RETURN(UniqueFd fd, connect_control(ctl_sock, timeout));
  json request = op;
  request["v"] = kProtocolVersion;
  TNK_RETURN_IF_ERROR(send_message(fd.get(), request));
  auto answer = expect_event(fd.get(), deadline, event);
  if (!answer.ok()) return timed_out(answer.error()) ? no_answer(ctl_sock, timeout, "answer") : answer.error();
  auto it = answer->find(event);
  if (it == answer->end() || !it->is_object()) {
    return failed(std::string("the sandbox's supervisor sent no ") + event + " description");
  }
  return *it;
}

}  // namespace

Result<json> request_network(const std::filesystem::path& ctl_sock, const json& op, std::chrono::milliseconds timeout) {
  return request_description(ctl_sock, op, "network", timeout);
}

json policy_op() { return {{"op", control_op_name(ControlOp::kPolicy)}}; }
json policy_change_op(const json& rules, const json& change) {
  return {{"op", control_op_name(ControlOp::kPolicy)}, {"rules", rules}, {"change", change}};
}

Result<json> request_policy(const std::filesystem::path& ctl_sock, const json& op, std::chrono::milliseconds timeout) {
  return request_description(ctl_sock, op, "policy", timeout);
}

Result<json> request_pending(const std::filesystem::path& ctl_sock, std::chrono::milliseconds timeout) {
  return request_description(ctl_sock, {{"op", control_op_name(ControlOp::kPolicy)}, {"pending", true}}, "pending",
                             timeout);
}

Result<UniqueFd> request_pause(const std::filesystem::path& ctl_sock, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  TNK_ASSIGN_OR_RETURN(UniqueFd fd, connect_control(ctl_sock, timeout));
  TNK_RETURN_IF_ERROR(send_message(fd.get(), {{"op", control_op_name(ControlOp::kPause)}, {"v", kProtocolVersion}}));
  auto paused = expect_event(fd.get(), deadline, "paused");
  if (!paused.ok()) return timed_out(paused.error()) ? no_answer(ctl_sock, timeout, "pause") : paused.error();
  return fd;
}

json agent_ping_op(int count) {
  return {{"op", control_op_name(ControlOp::kAgentPing)}, {"v", kProtocolVersion}, {"count", count}};
}

Result<std::vector<int64_t>> request_agent_pings(const std::filesystem::path& ctl_sock, int count,
                                                 std::chrono::milliseconds timeout) {
  if (count < 1 || count > kMaxAgentPings) {
    return usage_error("agent-ping needs a count from 1 to " + std::to_string(kMaxAgentPings));
  }
  auto deadline = Clock::now() + timeout;
  TNK_ASSIGN_OR_RETURN(UniqueFd fd, connect_control(ctl_sock, timeout));
  TNK_RETURN_IF_ERROR(send_message(fd.get(), agent_ping_op(count)));
  auto answer = expect_event(fd.get(), deadline, "agent-pong");
  if (!answer.ok()) return timed_out(answer.error()) ? no_answer(ctl_sock, timeout, "answer") : answer.error();
  auto it = answer->find("rtt_us");
  if (it == answer->end() || !it->is_array()) return failed("the sandbox's supervisor sent no round-trip times");
  std::vector<int64_t> rtts;
  for (const auto& rtt : *it) {
    if (!rtt.is_number_integer()) return failed("the sandbox's supervisor sent a round-trip time that is not a number");
    rtts.push_back(rtt.get<int64_t>());
  }
  return rtts;
}

}  // namespace tnk::session
