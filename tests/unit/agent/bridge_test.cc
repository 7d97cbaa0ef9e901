#include "agent/bridge.h"

#include <cerrno>

#include <gtest/gtest.h>

namespace tnk::agent {
namespace {

TEST(AgentBridge, RequestRoundTrips) {
  std::string line = bridge_request({"127.0.0.1", 8000});
  EXPECT_EQ(line, "tnk-connect 127.0.0.1 8000\n");
  line.pop_back();
  auto target = parse_bridge_request(line);
  ASSERT_TRUE(target.ok()) << target.error().message;
  EXPECT_EQ(target->ip, "127.0.0.1");
  EXPECT_EQ(target->port, 8000);
}

TEST(AgentBridge, RefusesMalformedRequests) {
  for (const char* line : {"", "tnk-connect", "tnk-connect 127.0.0.1", "tnk-connect 127.0.0.1 0",
                           "tnk-connect 127.0.0.1 65536", "tnk-connect 127.0.0.1 80x", "tnk-connect localhost 80",
                           "tnk-connect ::1 80", "connect 127.0.0.1 80", "tnk-connect 127.0.0.1  80"}) {
    auto target = parse_bridge_request(line);
    EXPECT_FALSE(target.ok()) << line;
    if (!target.ok()) {
      EXPECT_NE(target.error().message.find("bad bridge request"), std::string::npos);
    }
  }
}

// Found by tests/fuzz/agent_words: inet_pton stops at a NUL, so "127.0.0.1\0junk" passed as an address
// and the junk was carried along in BridgeTarget::ip.
TEST(AgentBridge, RefusesANulInTheAddress) {
  using namespace std::string_view_literals;
  EXPECT_FALSE(parse_bridge_request("tnk-connect 127.0.0.1\0x 8080"sv).ok());
  EXPECT_FALSE(parse_bridge_request("tnk-connect 127.0.0.1\0 8080"sv).ok());
}

TEST(AgentBridge, RepliesCarryTheGuestsErrno) {
  EXPECT_EQ(bridge_reply(0, "ignored"), "ok\n");
  EXPECT_TRUE(parse_bridge_reply("ok").ok());
  std::string reply = bridge_reply(ECONNREFUSED, "connecting to 127.0.0.1:8000 inside the vm");
  EXPECT_EQ(reply.back(), '\n');
  reply.pop_back();
  Status status = parse_bridge_reply(reply);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().sys_errno, ECONNREFUSED);
  EXPECT_EQ(status.error().message, "connecting to 127.0.0.1:8000 inside the vm: Connection refused");
}

TEST(AgentBridge, ReplyLinesStayShortAndSingle) {
  std::string reply = bridge_reply(EINVAL, std::string(500, 'x') + "\nsecond line");
  EXPECT_LE(reply.size(), kBridgeMaxLine);
  EXPECT_EQ(reply.find('\n'), reply.size() - 1);
  EXPECT_FALSE(parse_bridge_reply("nonsense").ok());
  EXPECT_FALSE(parse_bridge_reply("error x y").ok());
}

}  // namespace
}  // namespace tnk::agent
