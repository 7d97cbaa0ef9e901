// The agent's serve loop against a raw peer: what it answers to bad frames (wrong magic, oversize
// length, another version, unknown type, anything before hello, a wrong token, window overrun), and
// that it never crashes: it either keeps serving or ends the connection with a fatal error frame.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include "agent/frame.h"
#include "agent/messages.h"
#include "agent_test_util.h"

namespace tnk::guest {
namespace {

using agent::testing::ForkedAgent;
using agent::testing::RawPeer;

// The fatal error the agent sent, after which it closed the connection and its serve loop returned.
std::string fatal_error(RawPeer& peer, ForkedAgent& agent) {
  auto frame = peer.next_of(agent::FrameType::kError);
  if (!frame) return "(no error frame)";
  auto error = agent::parse_error(frame->payload);
  EXPECT_TRUE(error.ok());
  EXPECT_TRUE(error->fatal);
  EXPECT_TRUE(peer.closed());
  auto status = agent.wait_exit();
  EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << "the agent crashed";
  return error->message;
}

bool pings(RawPeer& peer) {
  peer.send(agent::FrameType::kPing, 0, "abc");
  auto pong = peer.next_of(agent::FrameType::kPong);
  return pong && pong->payload == "abc";
}

TEST(AgentServerTest, HelloThenPing) {
  ForkedAgent agent;
  RawPeer peer(agent.take_host_end());
  peer.hello();
  auto ok = peer.next();
  ASSERT_TRUE(ok && ok->kind() == agent::FrameType::kHelloOk);
  auto hello = agent::parse_hello_ok(ok->payload);
  ASSERT_TRUE(hello.ok());
  EXPECT_EQ(hello->version, agent::kProtocolVersion);
  EXPECT_TRUE(pings(peer));
}

TEST(AgentServerTest, FramesBeforeHelloAreRefused) {
  ForkedAgent agent;
  RawPeer peer(agent.take_host_end());
  peer.send(agent::FrameType::kExec, 1, "{}");
  EXPECT_NE(fatal_error(peer, agent).find("first message must be hello, not exec"), std::string::npos);
}

TEST(AgentServerTest, WrongTokenIsRefused) {
  ForkedAgent agent;
  RawPeer peer(agent.take_host_end());
  peer.hello("guess");
  EXPECT_NE(fatal_error(peer, agent).find("wrong token"), std::string::npos);
}

TEST(AgentServerTest, WrongMagicIsRefused) {
  ForkedAgent agent;
  RawPeer peer(agent.take_host_end());
  peer.send_bytes("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(fatal_error(peer, agent).find("bad frame magic"), std::string::npos);
}

TEST(AgentServerTest, OversizeLengthIsRefusedBeforeThePayloadArrives) {
  ForkedAgent agent;
  RawPeer peer(agent.take_host_end());
  peer.hello();
  ASSERT_TRUE(peer.next_of(agent::FrameType::kHelloOk));
  std::string header = agent::encode_frame(agent::FrameType::kStdin, 1, "");
  header[12] = '\x7f';  // length 0x7f000000
  peer.send_bytes(header);
  EXPECT_NE(fatal_error(peer, agent).find("over the limit of 65536"), std::string::npos);
}

TEST(AgentServerTest, AnotherVersionIsRefused) {
  ForkedAgent agent;
  RawPeer peer(agent.take_host_end());
  std::string frame =
      agent::encode_frame(agent::FrameType::kHello, 0, agent::encode_hello({2, agent::testing::kToken}));
  frame[4] = 2;
  peer.send_bytes(frame);
  EXPECT_NE(fatal_error(peer, agent).find("unsupported version 2"), std::string::npos);
}

TEST(AgentServerTest, UnknownTypeIsAnsweredAndTheConnectionGoesOn) {
  ForkedAgent agent;
  RawPeer peer(agent.take_host_end());
  peer.hello();
  std::string frame = agent::encode_frame(agent::FrameType::kPing, 0, "");
  frame[5] = '\x7e';
  peer.send_bytes(frame);
  auto error = peer.next_of(agent::FrameType::kError);
  ASSERT_TRUE(error);
  auto info = agent::parse_error(error->payload);
  ASSERT_TRUE(info.ok());
  EXPECT_FALSE(info->fatal);
  EXPECT_NE(info->message.find("type 0x7e"), std::string::npos) << info->message;
  EXPECT_TRUE(pings(peer));
}

TEST(AgentServerTest, BadExecIsAnErrorForThatSessionOnly) {
  ForkedAgent agent;
  RawPeer peer(agent.take_host_end());
  peer.hello();
  peer.send(agent::FrameType::kExec, 7, R"({"argv":[],"cwd":"/"})");
  auto error = peer.next_of(agent::FrameType::kError, 7);
  ASSERT_TRUE(error);
  EXPECT_NE(agent::parse_error(error->payload)->message.find("argv"), std::string::npos);
  peer.send(agent::FrameType::kExec, 0, R"({"argv":["true"],"cwd":"/"})");
  EXPECT_TRUE(peer.next_of(agent::FrameType::kError, 0));
  EXPECT_TRUE(pings(peer));
}

TEST(AgentServerTest, StdinBeyondTheWindowIsRefused) {
  ForkedAgent agent;
  RawPeer peer(agent.take_host_end());
  peer.hello();
  peer.send(agent::FrameType::kExec, 1,
            R"({"argv":["sleep","100"],"env":[],"cwd":"/","uid":)" + std::to_string(::getuid()) + R"(,"gid":)" +
                std::to_string(::getgid()) + "}");
  ASSERT_TRUE(peer.next_of(agent::FrameType::kStarted, 1));
  std::string chunk(agent::kMaxPayload, 'x');
  // The pipe takes up to 64 KiB (acked), the agent queues a window more; what comes on top is refused.
  for (std::size_t sent = 0; sent < 2 * agent::kStreamWindow; sent += chunk.size())
    peer.send(agent::FrameType::kStdin, 1, chunk);
  EXPECT_NE(fatal_error(peer, agent).find("more stdin than the window"), std::string::npos);
}

// Over virtio-serial the agent may miss a quick reconnect of the host side: the next hello is a new
// connection, and the sessions of the old one are ended as if it had closed.
TEST(AgentServerTest, SecondHelloStartsANewConnection) {
  ForkedAgent agent;
  RawPeer peer(agent.take_host_end());
  peer.hello();
  ASSERT_TRUE(peer.next_of(agent::FrameType::kHelloOk));
  peer.send(agent::FrameType::kExec, 1,
            R"({"argv":["sleep","100"],"env":[],"cwd":"/","uid":)" + std::to_string(::getuid()) + R"(,"gid":)" +
                std::to_string(::getgid()) + "}");
  auto started = peer.next_of(agent::FrameType::kStarted, 1);
  ASSERT_TRUE(started);
  pid_t pid = static_cast<pid_t>(agent::parse_started(started->payload)->pid);
  ASSERT_EQ(::kill(pid, 0), 0);
  peer.hello();
  ASSERT_TRUE(peer.next_of(agent::FrameType::kHelloOk));
  EXPECT_NE(::kill(pid, 0), 0) << "the old connection's session survived";
  EXPECT_TRUE(pings(peer));
}

TEST(AgentServerTest, FramesForEndedSessionsAreIgnored) {
  ForkedAgent agent;
  RawPeer peer(agent.take_host_end());
  peer.hello();
  peer.send(agent::FrameType::kStdin, 99, "late");
  peer.send(agent::FrameType::kSignal, 99, agent::encode_signal(9));
  peer.send(agent::FrameType::kFileData, 99, "late");
  EXPECT_TRUE(pings(peer));
}

}  // namespace
}  // namespace tnk::guest
