// The debugging op `agent-ping` on the control socket (docs/control-protocol.md): what the client sends
// and how it reads the supervisor's answer.
#include <thread>

#include <gtest/gtest.h>

#include "session/control_client.h"
#include "session_test_util.h"

namespace tnk::session {
namespace {

using std::chrono::milliseconds;
using testing::must_recv;
using testing::TempDir;

// Accepts one connection on a fresh control socket and answers the request with `answer`.
struct FakeSupervisor {
  TempDir dir;
  std::filesystem::path path = dir.path() / "ctl.sock";
  nlohmann::json request;
  std::thread thread;

  void serve(nlohmann::json answer) {
    auto listener = listen_control(path);
    ASSERT_TRUE(listener.ok());
    thread = std::thread([this, fd = std::move(*listener), answer] {
      auto conn = accept_control(fd.get());
      ASSERT_TRUE(conn.ok());
      request = must_recv(conn->get()).body;
      EXPECT_TRUE(send_message(conn->get(), answer).ok());
    });
  }
  ~FakeSupervisor() {
    if (thread.joinable()) thread.join();
  }
};

TEST(AgentPingControl, ReturnsTheRoundTripsInOrder) {
  FakeSupervisor supervisor;
  supervisor.serve({{"event", "agent-pong"}, {"v", 1}, {"rtt_us", {120, 95, 300}}});
  auto rtts = request_agent_pings(supervisor.path, 3, milliseconds(2000));
  supervisor.thread.join();
  ASSERT_TRUE(rtts.ok()) << rtts.error().message;
  EXPECT_EQ(*rtts, (std::vector<int64_t>{120, 95, 300}));
  EXPECT_EQ(supervisor.request, agent_ping_op(3));
  EXPECT_EQ(supervisor.request, (nlohmann::json{{"op", "agent-ping"}, {"v", 1}, {"count", 3}}));
}

TEST(AgentPingControl, AnErrorEventKeepsItsKind) {
  FakeSupervisor supervisor;
  supervisor.serve(error_event("this sandbox has no guest agent to ping", "agent-ping needs a vm sandbox", 1));
  auto rtts = request_agent_pings(supervisor.path, 1, milliseconds(2000));
  ASSERT_FALSE(rtts.ok());
  EXPECT_EQ(rtts.error().message, "this sandbox has no guest agent to ping");
  EXPECT_EQ(rtts.error().hint, "agent-ping needs a vm sandbox");
}

TEST(AgentPingControl, RefusesACountOutOfRangeWithoutAsking) {
  TempDir dir;
  for (int count : {0, kMaxAgentPings + 1}) {
    auto rtts = request_agent_pings(dir.path() / "none.sock", count, milliseconds(100));
    ASSERT_FALSE(rtts.ok());
    EXPECT_EQ(rtts.error().kind, ErrorKind::kUsage);
  }
}

TEST(AgentPingControl, ABadAnswerIsAnError) {
  FakeSupervisor supervisor;
  supervisor.serve({{"event", "agent-pong"}, {"v", 1}, {"rtt_us", {"fast"}}});
  auto rtts = request_agent_pings(supervisor.path, 1, milliseconds(2000));
  ASSERT_FALSE(rtts.ok());
  EXPECT_NE(rtts.error().message.find("not a number"), std::string::npos);
}

}  // namespace
}  // namespace tnk::session
