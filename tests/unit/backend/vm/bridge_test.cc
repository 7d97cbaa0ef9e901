#include "backend/vm/bridge.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <cerrno>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "net_test_util.h"

namespace tnk::vm {
namespace {

using namespace std::chrono_literals;
using net::testing::listen_loopback;
using net::testing::port_of;
using net::testing::read_until_eof;
using net::testing::send_text;

// A stand-in for the guest's bridge: takes one connection, records its request line, answers `reply`.
class FakeBridge {
 public:
  explicit FakeBridge(std::string reply) : listener_(listen_loopback()), port_(port_of(listener_.get())) {
    thread_ = std::thread([this, reply] {
      UniqueFd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      char c = 0;
      while (::recv(client.get(), &c, 1, 0) == 1 && c != '\n') request_ += c;
      send_text(client.get(), reply);
    });
  }
  ~FakeBridge() {
    if (thread_.joinable()) thread_.join();
  }
  uint16_t port() const { return port_; }
  std::string request() {
    if (thread_.joinable()) thread_.join();
    return request_;
  }

 private:
  UniqueFd listener_;
  uint16_t port_;
  std::string request_;
  std::thread thread_;
};

TEST(VmBridge, AsksForTheTargetAndLeavesWhatFollowsTheReply) {
  FakeBridge bridge("ok\nSERVER-SPEAKS-FIRST");
  auto fd = bridge_connect("127.0.0.1", bridge.port(), {"127.0.0.1", 8000}, net::Clock::now() + 5s, -1);
  ASSERT_TRUE(fd.ok()) << fd.error().message;
  EXPECT_EQ(bridge.request(), "tnk-connect 127.0.0.1 8000");
  int flags = ::fcntl(fd->get(), F_GETFL);
  ::fcntl(fd->get(), F_SETFL, flags & ~O_NONBLOCK);
  EXPECT_EQ(read_until_eof(fd->get()), "SERVER-SPEAKS-FIRST");
}

TEST(VmBridge, TheGuestsRefusalKeepsItsErrno) {
  FakeBridge bridge("error 111 connecting to 127.0.0.1:8000 inside the vm\n");
  auto fd = bridge_connect("127.0.0.1", bridge.port(), {"127.0.0.1", 8000}, net::Clock::now() + 5s, -1);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().sys_errno, ECONNREFUSED);
  EXPECT_EQ(fd.error().message, "connecting to 127.0.0.1:8000 inside the vm: Connection refused");
}

TEST(VmBridge, NoBridgeAndNoAnswerAreErrors) {
  uint16_t closed = port_of(listen_loopback().get());
  auto refused = bridge_connect("127.0.0.1", closed, {"127.0.0.1", 8000}, net::Clock::now() + 5s, -1);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("reaching the guest agent's connect bridge"), std::string::npos);
  FakeBridge silent("");
  auto closed_early = bridge_connect("127.0.0.1", silent.port(), {"127.0.0.1", 8000}, net::Clock::now() + 5s, -1);
  ASSERT_FALSE(closed_early.ok());
  EXPECT_NE(closed_early.error().message.find("without an answer"), std::string::npos);
}

}  // namespace
}  // namespace tnk::vm
