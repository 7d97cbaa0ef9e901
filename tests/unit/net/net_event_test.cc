#include "net/net_event.h"

#include <gtest/gtest.h>

#include <string>

namespace tnk::net {
namespace {

// Security review L1: the cut that keeps a line under PIPE_BUF must not split a UTF-8 sequence, or
// the supervisor's strict encoder throws and the decision is lost. (The fields are built in place:
// GCC 12 warns falsely, -Warray-bounds, on assigning such a temporary.)
TEST(NetEvent, LongTextIsCutBeforeAUtf8Sequence) {
  NetEvent event;
  event.reason.assign(599, 'r').append("\xc3\xa9 and more");  // "é" across byte 600
  event.host.assign(598, 'h').append("\xe2\x82\xac");         // "€" across byte 600
  nlohmann::json line = to_json(event);
  EXPECT_EQ(line["reason"], std::string(599, 'r'));
  EXPECT_EQ(line["host"], std::string(598, 'h'));
  EXPECT_NO_THROW((void)line.dump());
}

// The pair: a sequence that ends at the limit is kept whole.
TEST(NetEvent, TextUpToTheLimitIsKeptWhole) {
  NetEvent event;
  event.reason.assign(598, 'r').append("\xc3\xa9tail");
  EXPECT_EQ(to_json(event)["reason"], event.reason.substr(0, 600));
  event.reason.assign(600, 'r');
  EXPECT_EQ(to_json(event)["reason"], event.reason);
}

}  // namespace
}  // namespace tnk::net
