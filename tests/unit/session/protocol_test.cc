// The control protocol's framing (SEQPACKET + SCM_RIGHTS) and its message validation.
#include <fcntl.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include "session/protocol.h"
#include "session_test_util.h"

namespace tnk::session {
namespace {

using nlohmann::json;
using testing::Pipe;
using testing::SocketPair;

Status raw_send(int sock, const std::string& bytes, const std::vector<int>& fds) {
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  if (::sendmsg(sock, &msg, MSG_NOSIGNAL) < 0) return sys_error(errno, "sendmsg");
  return ok_status();
}

TEST(SessionProtocol, RoundTripsABodyAndDescriptors) {
  SocketPair sp;
  Pipe pipe;
  int fds[] = {pipe.w.get()};
  ASSERT_TRUE(send_message(sp.client.get(), {{"op", "x"}, {"n", 7}}, fds).ok());
  pipe.w.reset();
  auto m = recv_message(sp.server.get());
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_TRUE(m->has_value());
  EXPECT_EQ((*m)->body, json({{"op", "x"}, {"n", 7}}));
  ASSERT_EQ((*m)->fds.size(), 1u);
  EXPECT_EQ(::fcntl((*m)->fds[0].get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  testing::write_str((*m)->fds[0].get(), "through");
  (*m)->fds.clear();
  EXPECT_EQ(testing::read_all(pipe.r.get()), "through");
}

TEST(SessionProtocol, OrderlyEofIsNullopt) {
  SocketPair sp;
  sp.client.reset();
  auto m = recv_message(sp.server.get());
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->has_value());
}

TEST(SessionProtocol, AMessageOfExactlyTheLimitPasses) {
  SocketPair sp;
  json body = {{"x", ""}};
  body["x"] = std::string(kMaxMessageBytes - body.dump().size(), 'a');
  ASSERT_EQ(body.dump().size(), kMaxMessageBytes);
  ASSERT_TRUE(send_message(sp.client.get(), body).ok());
  auto m = recv_message(sp.server.get());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ((*m)->body, body);
}

TEST(SessionProtocol, RefusesToSendMoreThanTheLimit) {
  SocketPair sp;
  auto s = send_message(sp.client.get(), {{"x", std::string(kMaxMessageBytes, 'a')}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("the limit is 64 KiB"), std::string::npos) << s.error().message;
}

TEST(SessionProtocol, AnOversizedMessageIsAnErrorAndItsDescriptorsAreClosed) {
  SocketPair sp;
  Pipe pipe;
  ASSERT_TRUE(raw_send(sp.client.get(), std::string(kMaxMessageBytes + 100, ' '), {pipe.w.get()}).ok());
  pipe.w.reset();
  auto m = recv_message(sp.server.get());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message, "control message truncated: it is larger than the 64 KiB limit");
  EXPECT_TRUE(testing::writers_gone(pipe.r.get()));
}

TEST(SessionProtocol, TooManyDescriptorsAreAnErrorAndAllAreClosed) {
  SocketPair sp;
  Pipe pipe;
  std::vector<int> five(5, pipe.w.get());
  ASSERT_FALSE(send_message(sp.client.get(), json::object(), five).ok());
  ASSERT_TRUE(raw_send(sp.client.get(), "{}", five).ok());
  pipe.w.reset();
  auto m = recv_message(sp.server.get());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message, "control message truncated: it carried more than 4 descriptors");
  EXPECT_TRUE(testing::writers_gone(pipe.r.get()));
}

TEST(SessionProtocol, BadJsonIsAnErrorAndItsDescriptorsAreClosed) {
  SocketPair sp;
  Pipe pipe;
  ASSERT_TRUE(raw_send(sp.client.get(), "{not json", {pipe.w.get()}).ok());
  ASSERT_TRUE(raw_send(sp.client.get(), "[1,2]", {}).ok());
  pipe.w.reset();
  auto bad = recv_message(sp.server.get());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("control message is not valid JSON"), std::string::npos);
  EXPECT_TRUE(testing::writers_gone(pipe.r.get()));
  auto array = recv_message(sp.server.get());
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(array.error().message, "control message is not a JSON object");
}

TEST(SessionProtocol, InvalidUtf8CannotBeSent) {
  SocketPair sp;
  auto s = send_message(sp.client.get(), {{"argv", {std::string("\xff\xfe")}}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("cannot encode control message"), std::string::npos);
}

TEST(SessionProtocol, SendingToAClosedPeerIsEpipeNotSigpipe) {
  SocketPair sp;
  sp.server.reset();
  auto s = send_message(sp.client.get(), {{"op", "ping"}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().sys_errno, EPIPE);
}

TEST(SessionProtocol, VersionMismatchNamesBothVersions) {
  auto s = check_version({{"event", "started"}, {"v", 2}}, "the supervisor");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "control protocol version mismatch: the supervisor speaks version 2, this tnk speaks version 1");
  EXPECT_FALSE(s.error().hint.empty());
  auto missing = check_version({{"event", "started"}}, "the supervisor");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "control message: field 'v' is missing (the protocol version of the supervisor)");
  EXPECT_TRUE(check_version({{"v", 1}}, "the client").ok());
}

ExecRequest sample() {
  ExecRequest r;
  r.argv = {"bash", "-lc", "echo hi"};
  r.env = {"TERM=xterm", "A=b=c"};
  r.cwd = "/workspace/x";
  r.tty = true;
  r.rows = 50;
  r.cols = 132;
  r.identity = Identity::kRoot;
  r.provisioning = true;
  return r;
}

// The wire names are the protocol (docs/control-protocol.md): a renamed op breaks a running supervisor.
TEST(SessionMessages, ControlOpsHaveTheirWireNamesBothWays) {
  const std::vector<std::pair<ControlOp, std::string>> wire = {
      {ControlOp::kExec, "exec"},       {ControlOp::kResize, "resize"},
      {ControlOp::kSignal, "signal"},   {ControlOp::kPing, "ping"},
      {ControlOp::kStop, "stop"},       {ControlOp::kNetwork, "network"},
      {ControlOp::kForward, "forward"}, {ControlOp::kAgentPing, "agent-ping"},
      {ControlOp::kPolicy, "policy"}};
  for (const auto& [op, name] : wire) {
    EXPECT_EQ(control_op_name(op), name);
    EXPECT_EQ(control_op_from_name(name), op) << name;
  }
  EXPECT_EQ(control_op_from_name(""), std::nullopt);
  EXPECT_EQ(control_op_from_name("Exec"), std::nullopt);
  EXPECT_EQ(control_op_from_name("agent_ping"), std::nullopt);
  EXPECT_EQ(resize_op(40, 100), json({{"op", "resize"}, {"rows", 40}, {"cols", 100}}));
  EXPECT_EQ(stop_op(std::chrono::milliseconds(5000)), json({{"op", "stop"}, {"v", 1}, {"grace_ms", 5000}}));
}

TEST(SessionMessages, ExecRequestRoundTrips) {
  json body = to_json(sample());
  EXPECT_EQ(body["op"], "exec");
  EXPECT_EQ(body["v"], 1);
  EXPECT_EQ(body["identity"], "root");
  EXPECT_EQ(body["provisioning"], true);
  body["unknown_field"] = "ignored";
  auto r = exec_request_from_json(body);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->argv, sample().argv);
  EXPECT_EQ(r->env, sample().env);
  EXPECT_EQ(r->cwd, "/workspace/x");
  EXPECT_TRUE(r->tty);
  EXPECT_EQ(r->rows, 50);
  EXPECT_EQ(r->cols, 132);
  EXPECT_EQ(r->identity, Identity::kRoot);
  EXPECT_TRUE(r->provisioning);
  body.erase("provisioning");  // an older client's session: not provisioning
  EXPECT_FALSE(exec_request_from_json(body)->provisioning);
}

std::string exec_error(const std::function<void(json&)>& edit) {
  json body = to_json(sample());
  edit(body);
  auto r = exec_request_from_json(body);
  return r.ok() ? "(accepted)" : r.error().message;
}

TEST(SessionMessages, ExecRequestValidationNamesTheField) {
  EXPECT_EQ(exec_error([](json& b) { b.erase("argv"); }), "control message: field 'argv' is missing");
  EXPECT_EQ(exec_error([](json& b) { b["argv"] = json::array(); }),
            "control message: field 'argv' must name a program (argv[0] is empty)");
  EXPECT_EQ(exec_error([](json& b) {
              b["argv"] = {"ls", 3};
            }),
            "control message: field 'argv' must be an array of strings");
  EXPECT_EQ(exec_error([](json& b) { b["argv"] = {std::string("l\0s", 3)}; }),
            "control message: field 'argv' must not contain NUL bytes");
  EXPECT_EQ(exec_error([](json& b) { b["env"] = {"NOEQUALS"}; }),
            "control message: field 'env' entry 0 is not of the form NAME=VALUE");
  EXPECT_EQ(exec_error([](json& b) {
              b["env"] = {"A=1", "1X=2"};
            }),
            "control message: field 'env' entry 1 has an invalid name '1X'");
  EXPECT_EQ(exec_error([](json& b) { b["env"] = {"A-B=2"}; }),
            "control message: field 'env' entry 0 has an invalid name 'A-B'");
  EXPECT_EQ(exec_error([](json& b) { b["env"] = {"=2"}; }),
            "control message: field 'env' entry 0 has an invalid name ''");
  EXPECT_EQ(exec_error([](json& b) { b["cwd"] = "workspace"; }),
            "control message: field 'cwd' must be an absolute path");
  EXPECT_EQ(exec_error([](json& b) { b["cwd"] = 5; }), "control message: field 'cwd' must be a string");
  EXPECT_EQ(exec_error([](json& b) { b.erase("tty"); }), "control message: field 'tty' is missing");
  EXPECT_EQ(exec_error([](json& b) { b["tty"] = "yes"; }), "control message: field 'tty' must be true or false");
  EXPECT_EQ(exec_error([](json& b) { b["rows"] = 70000; }),
            "control message: field 'rows' must be an integer from 0 to 65535");
  EXPECT_EQ(exec_error([](json& b) { b["cols"] = -1; }),
            "control message: field 'cols' must be an integer from 0 to 65535");
  EXPECT_EQ(exec_error([](json& b) { b["identity"] = "admin"; }),
            "control message: field 'identity' must be \"agent\" or \"root\"");
}

TEST(SessionMessages, RepeatedEnvNamesKeepTheLastValue) {
  json body = to_json(sample());
  body["env"] = {"A=1", "B=2", "A=3"};
  auto r = exec_request_from_json(body);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->env, (std::vector<std::string>{"A=3", "B=2"}));
}

TEST(SessionMessages, IntegersDoNotWrapIntoRange) {
  auto huge = signal_from_json(json::parse(R"({"op":"signal","signal":18446744073709551615})"));
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.error().message, "control message: field 'signal' must be an integer from 1 to 64");
  EXPECT_FALSE(signal_from_json({{"signal", 0}}).ok());
  EXPECT_FALSE(signal_from_json({{"signal", 2.5}}).ok());
  EXPECT_EQ(*signal_from_json(signal_op(2)), 2);
}

TEST(SessionMessages, OpsAndEventsRoundTrip) {
  auto resize = resize_from_json(resize_op(40, 120));
  ASSERT_TRUE(resize.ok());
  EXPECT_EQ(resize->rows, 40);
  EXPECT_EQ(resize->cols, 120);
  EXPECT_EQ(*stop_grace_from_json(stop_op(std::chrono::milliseconds(1500))), std::chrono::milliseconds(1500));
  EXPECT_EQ(stop_op(std::chrono::milliseconds(1)).value("v", 0), 1);
  auto e = remote_error_from_json(error_event("command not found: nope", "check PATH", 127));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->message, "command not found: nope");
  EXPECT_EQ(e->hint, "check PATH");
  EXPECT_EQ(e->exit_code, 127);
  EXPECT_EQ(started_event(9)["v"], 1);
  EXPECT_EQ(pong_event("ns", 9)["backend"], "ns");
  EXPECT_EQ(stopping_event()["v"], 1);
  EXPECT_EQ(exit_event(130), json({{"event", "exit"}, {"code", 130}}));
  EXPECT_EQ(exit_event(143, true), json({{"event", "exit"}, {"code", 143}, {"stopped", true}}));
}

}  // namespace
}  // namespace tnk::session
