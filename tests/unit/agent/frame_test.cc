// The agent protocol's frame layer: layout, any chunking, limits, and sticky errors.
#include "agent/frame.h"

#include <gtest/gtest.h>

namespace tnk::agent {
namespace {

TEST(AgentFrameTest, HeaderLayoutIsBigEndianAndSixteenBytes) {
  std::string f = encode_frame(FrameType::kStdout, 0x01020304, "hi");
  ASSERT_EQ(f.size(), kHeaderBytes + 2);
  EXPECT_EQ(f.substr(0, 4), "TNKA");
  EXPECT_EQ(f[4], 1);
  EXPECT_EQ(f[5], 0x14);
  EXPECT_EQ(f.substr(6, 2), std::string(2, '\0'));
  EXPECT_EQ(f.substr(8, 4), "\x01\x02\x03\x04");
  EXPECT_EQ(f.substr(12, 4), std::string("\0\0\0\x02", 4));
  EXPECT_EQ(f.substr(16), "hi");
}

TEST(AgentFrameTest, DecodesFramesFedOneByteAtATime) {
  std::string stream = encode_frame(FrameType::kHello, 0, "{}") + encode_frame(FrameType::kStdinEof, 5) +
                       encode_frame(FrameType::kStdin, 5, std::string(70000 % kMaxPayload, 'z'));
  FrameDecoder d;
  std::vector<Frame> frames;
  for (char c : stream) ASSERT_TRUE(d.feed(std::string_view(&c, 1), frames).ok());
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].kind(), FrameType::kHello);
  EXPECT_EQ(frames[0].payload, "{}");
  EXPECT_EQ(frames[1].kind(), FrameType::kStdinEof);
  EXPECT_EQ(frames[1].session, 5u);
  EXPECT_EQ(frames[1].payload, "");
  EXPECT_EQ(frames[2].payload.size(), 70000 % kMaxPayload);
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(AgentFrameTest, DecodesManyFramesInOneChunkAndKeepsTheRest) {
  std::string stream = encode_frame(FrameType::kPing, 0, "a") + encode_frame(FrameType::kPing, 0, "b");
  std::string partial = encode_frame(FrameType::kPing, 0, "cde");
  FrameDecoder d;
  std::vector<Frame> frames;
  ASSERT_TRUE(d.feed(stream + partial.substr(0, 18), frames).ok());
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(d.buffered(), 18u);
  ASSERT_TRUE(d.feed(partial.substr(18), frames).ok());
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[2].payload, "cde");
}

TEST(AgentFrameTest, MaximumPayloadPassesAndOneMoreIsRefusedBeforeAllocating) {
  std::string max(kMaxPayload, 'm');
  FrameDecoder d;
  std::vector<Frame> frames;
  ASSERT_TRUE(d.feed(encode_frame(FrameType::kStdout, 1, max), frames).ok());
  ASSERT_EQ(frames.size(), 1u);
  std::string out;
  EXPECT_FALSE(append_frame(out, FrameType::kStdout, 1, max + "!").ok());
  std::string header = encode_frame(FrameType::kStdout, 1);
  header[13] = 1;  // length 0x00010001 = 65537
  header[15] = 1;
  Status s = d.feed(header, frames);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("announces 65537 payload bytes"), std::string::npos) << s.error().message;
  EXPECT_EQ(d.buffered(), kHeaderBytes);
}

TEST(AgentFrameTest, ErrorsAreStickyUntilReset) {
  FrameDecoder d;
  std::vector<Frame> frames;
  ASSERT_FALSE(d.feed("XXXXXXXXXXXXXXXX", frames).ok());
  EXPECT_TRUE(d.has_failed());
  Status again = d.feed(encode_frame(FrameType::kPing, 0), frames);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("bad frame magic 0x58585858"), std::string::npos);
  EXPECT_TRUE(frames.empty());
  d.reset();
  EXPECT_TRUE(d.feed(encode_frame(FrameType::kPing, 0), frames).ok());
  EXPECT_EQ(frames.size(), 1u);
}

TEST(AgentFrameTest, VersionAndFlagsAreChecked) {
  std::vector<Frame> frames;
  std::string v2 = encode_frame(FrameType::kPing, 0);
  v2[4] = 2;
  FrameDecoder a;
  EXPECT_NE(a.feed(v2, frames).error().message.find("unsupported version 2 (this side speaks 1)"), std::string::npos);
  std::string flagged = encode_frame(FrameType::kPing, 0);
  flagged[7] = 1;
  FrameDecoder b;
  EXPECT_FALSE(b.feed(flagged, frames).ok());
}

TEST(AgentFrameTest, UnknownTypesAreFramedAndNamed) {
  std::string f = encode_frame(FrameType::kPing, 3, "x");
  f[5] = '\x7e';
  FrameDecoder d;
  std::vector<Frame> frames;
  ASSERT_TRUE(d.feed(f, frames).ok());
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_FALSE(is_known_type(frames[0].type));
  EXPECT_EQ(frame_type_name(frames[0].type), "type 0x7e");
  EXPECT_EQ(frame_type_name(0x10), "exec");
  EXPECT_TRUE(is_known_type(0x23));
}

}  // namespace
}  // namespace tnk::agent
