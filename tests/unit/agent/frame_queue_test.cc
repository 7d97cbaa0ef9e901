// The agent protocol's output queue: its bound, and writing to sockets, pipes and broken peers.
#include "agent/frame_queue.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "core/unique_fd.h"

namespace tnk::agent {
namespace {

struct Pair {
  UniqueFd ours, theirs;
};

Pair socket_pair() {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds), 0);
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

std::string read_all(int fd) {
  std::string got;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) got.append(buf, static_cast<std::size_t>(n));
  return got;
}

TEST(AgentFrameQueueTest, HasNoRoomOnceItHoldsItsBound) {
  FrameQueue q(2 * kHeaderBytes + 4);
  ASSERT_TRUE(q.push(FrameType::kStdout, 1, "ab").ok());
  EXPECT_EQ(q.queued(), kHeaderBytes + 2);
  EXPECT_TRUE(q.has_room());
  ASSERT_TRUE(q.push(FrameType::kStdout, 1, "cd").ok());
  EXPECT_EQ(q.queued(), 2 * kHeaderBytes + 4);
  EXPECT_FALSE(q.has_room()) << "a queue at its bound refuses more input";
  // Control frames still queue past the bound (an ack must never be lost); the room stays refused.
  ASSERT_TRUE(q.push(FrameType::kInputAck, 1, "{}").ok());
  EXPECT_FALSE(q.has_room());
}

TEST(AgentFrameQueueTest, RefusesAnOversizePayloadAndQueuesNothing) {
  FrameQueue q(1 << 20);
  EXPECT_FALSE(q.push(FrameType::kStdout, 1, std::string(kMaxPayload + 1, 'x')).ok());
  EXPECT_EQ(q.queued(), 0u);
}

TEST(AgentFrameQueueTest, FlushWritesTheFramesInOrderAndMakesRoomAgain) {
  auto [ours, theirs] = socket_pair();
  FrameQueue q(kHeaderBytes);
  ASSERT_TRUE(q.push(FrameType::kPing, 0, "a").ok());
  ASSERT_TRUE(q.push(FrameType::kExit, 7, "{}").ok());
  EXPECT_FALSE(q.has_room());
  ASSERT_TRUE(q.flush(ours.get()));
  EXPECT_EQ(q.queued(), 0u);
  EXPECT_TRUE(q.has_room());
  EXPECT_EQ(read_all(theirs.get()), encode_frame(FrameType::kPing, 0, "a") + encode_frame(FrameType::kExit, 7, "{}"));
}

TEST(AgentFrameQueueTest, FlushKeepsWhatAFullSocketDoesNotTake) {
  auto [ours, theirs] = socket_pair();
  int small = 4096;
  ASSERT_EQ(::setsockopt(ours.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
  FrameQueue q(1 << 22);
  std::string expected;
  for (uint32_t i = 0; i < 64; ++i) {
    std::string payload(kMaxPayload, static_cast<char>('a' + i % 26));
    ASSERT_TRUE(q.push(FrameType::kStdout, i, payload).ok());
    expected += encode_frame(FrameType::kStdout, i, payload);
  }
  ASSERT_TRUE(q.flush(ours.get())) << "a full socket is not a broken one";
  EXPECT_GT(q.queued(), 0u);
  std::string got;
  while (q.queued() > 0) {
    got += read_all(theirs.get());
    ASSERT_TRUE(q.flush(ours.get()));
  }
  got += read_all(theirs.get());
  EXPECT_EQ(got, expected);
}

TEST(AgentFrameQueueTest, FlushWritesToAPipeLikeASerialPort) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  FrameQueue q(1 << 20);
  ASSERT_TRUE(q.push(FrameType::kPong, 0, "x").ok());
  ASSERT_TRUE(q.flush(write_end.get()));
  EXPECT_EQ(read_all(read_end.get()), encode_frame(FrameType::kPong, 0, "x"));
}

TEST(AgentFrameQueueTest, FlushToAClosedPeerFails) {
  auto [ours, theirs] = socket_pair();
  theirs.reset();
  FrameQueue q(1 << 20);
  ASSERT_TRUE(q.push(FrameType::kPong, 0, "x").ok());
  EXPECT_FALSE(q.flush(ours.get()));
  EXPECT_EQ(errno, EPIPE);
}

}  // namespace
}  // namespace tnk::agent
