#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/forwarder.h"
#include "net_test_util.h"

namespace tnk::net {
namespace {

using namespace std::chrono_literals;
using testing::connect_loopback;
using testing::count_open_fds;
using testing::EchoServer;
using testing::EventLog;
using testing::listen_loopback;
using testing::port_of;
using testing::read_until_eof;
using testing::send_text;
using testing::Serving;

// A port on 127.0.0.1 that nothing listens on.
uint16_t closed_port() {
  UniqueFd fd = listen_loopback();
  return port_of(fd.get());
}

TEST(NetForwarder, RelaysBothWaysWithHalfClose) {
  EchoServer echo;
  UniqueFd listener = listen_loopback();
  uint16_t port = port_of(listener.get());
  Serving serving([&](int stop) { return serve_forward(listener.get(), {"127.0.0.1", echo.port()}, stop); });
  UniqueFd client = connect_loopback(port);
  ASSERT_TRUE(client.valid());
  ASSERT_TRUE(send_text(client.get(), "hello "));
  ASSERT_TRUE(send_text(client.get(), "inference"));
  ::shutdown(client.get(), SHUT_WR);  // the echo answers only after our end of stream arrived
  EXPECT_EQ(read_until_eof(client.get()), "hello inference");
  EXPECT_TRUE(serving.stop().ok());
}

TEST(NetEvent, RoundTripsThroughItsJsonLineAndStaysUnderPipeBuf) {
  NetEvent event;
  event.allowed = true;
  event.host = "docs.example.org";
  event.address = "203.0.113.9";
  event.port = 443;
  event.rule = "*.example.org";
  event.reason = std::string(5000, 'r');  // an upstream error message can be long
  event.bytes_up = 1;
  event.bytes_down = 1ULL << 40;
  nlohmann::json line = to_json(event);
  EXPECT_LT(line.dump().size() + 1, 4096u);  // one atomic write() on the event pipe
  NetEvent back = net_event_from_json(line);
  EXPECT_EQ(back.host, event.host);
  EXPECT_EQ(back.address, event.address);
  EXPECT_EQ(back.port, 443);
  EXPECT_EQ(back.rule, event.rule);
  EXPECT_EQ(back.bytes_down, event.bytes_down);
  EXPECT_TRUE(back.allowed);
  EXPECT_LT(back.reason.size(), event.reason.size());
}

// Found by tests/fuzz/net_event: a field of another type threw nlohmann's type_error in the supervisor.
TEST(NetEvent, FieldsOfAnotherTypeOrOutOfRangeReadAsAbsent) {
  auto line = nlohmann::json::parse(R"({"allowed":"yes","host":1,"address":null,"port":70000,"rule":[],)"
                                    R"("reason":{},"bytes_up":-1,"bytes_down":1.5})");
  NetEvent event = net_event_from_json(line);
  EXPECT_FALSE(event.allowed);
  EXPECT_EQ(event.host, "");
  EXPECT_EQ(event.address, "");
  EXPECT_EQ(event.port, 0);
  EXPECT_EQ(event.rule, "");
  EXPECT_EQ(event.reason, "");
  EXPECT_EQ(event.bytes_up, 0u);
  EXPECT_EQ(event.bytes_down, 0u);
}

TEST(NetForwarder, EachConnectionIsOneEventWithItsBytes) {
  EchoServer echo;
  UniqueFd listener = listen_loopback();
  EventLog log;
  NetEventSink sink = log.sink();
  std::vector<NetEvent>& events = log.events;
  ForwardTarget target{"127.0.0.1", echo.port(), "port forward 8080:80"};
  Serving serving([&](int stop) { return serve_forward(listener.get(), target, stop, sink); });
  UniqueFd client = connect_loopback(port_of(listener.get()));
  ASSERT_TRUE(send_text(client.get(), "twelve bytes"));
  ::shutdown(client.get(), SHUT_WR);
  EXPECT_EQ(read_until_eof(client.get()), "twelve bytes");
  client.reset();
  EXPECT_TRUE(serving.stop().ok());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].allowed);
  EXPECT_EQ(events[0].rule, "port forward 8080:80");
  EXPECT_EQ(events[0].address, "127.0.0.1");
  EXPECT_EQ(events[0].port, echo.port());
  EXPECT_EQ(events[0].bytes_up, 12u);
  EXPECT_EQ(events[0].bytes_down, 12u);
  EXPECT_EQ(events[0].reason, "closed");
}

// A port forward into a vm opens its connection through the target's own dial (the guest's bridge);
// the events read as with a direct connection, naming the target's address.
TEST(NetForwarder, DialOpensTheConnectionInsteadOfResolving) {
  EchoServer echo;
  UniqueFd listener = listen_loopback();
  EventLog log;
  NetEventSink sink = log.sink();
  std::vector<NetEvent>& events = log.events;
  int dials = 0;
  ForwardTarget target{"127.0.0.1", 8000, "port forward 8080:8000"};
  target.dial = [&](Clock::time_point, int) -> Result<UniqueFd> {
    ++dials;
    UniqueFd fd = connect_loopback(echo.port());
    set_nonblocking(fd.get());
    return fd;
  };
  Serving serving([&](int stop) { return serve_forward(listener.get(), target, stop, sink); });
  UniqueFd client = connect_loopback(port_of(listener.get()));
  ASSERT_TRUE(send_text(client.get(), "via dial"));
  ::shutdown(client.get(), SHUT_WR);
  EXPECT_EQ(read_until_eof(client.get()), "via dial");
  client.reset();
  EXPECT_TRUE(serving.stop().ok());
  EXPECT_EQ(dials, 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].address, "127.0.0.1");
  EXPECT_EQ(events[0].port, 8000);
  EXPECT_EQ(events[0].bytes_up, 8u);
  EXPECT_EQ(events[0].reason, "closed");
}

TEST(NetForwarder, AFailedDialIsTheEventsReason) {
  UniqueFd listener = listen_loopback();
  std::vector<std::string> reasons;
  NetEventSink sink = [&](const NetEvent& e) { reasons.push_back(e.reason); };
  ForwardTarget target{"127.0.0.1", 8000, "port forward 8080:8000"};
  target.dial = [](Clock::time_point, int) -> Result<UniqueFd> {
    return sys_error(ECONNREFUSED, "connecting to 127.0.0.1:8000 inside the vm");
  };
  Serving serving([&](int stop) { return serve_forward(listener.get(), target, stop, sink); });
  UniqueFd client = connect_loopback(port_of(listener.get()));
  EXPECT_EQ(read_until_eof(client.get()), "");
  EXPECT_TRUE(serving.stop().ok());
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(reasons[0], "forwarding to 127.0.0.1:8000: connecting to 127.0.0.1:8000 inside the vm: Connection refused");
}

TEST(NetForwarder, StreamsLargeTransfersBothWaysAtOnce) {
  EchoServer echo;
  UniqueFd listener = listen_loopback();
  uint16_t port = port_of(listener.get());
  Serving serving([&](int stop) { return serve_forward(listener.get(), {"localhost", echo.port()}, stop); });
  UniqueFd client = connect_loopback(port);
  ASSERT_TRUE(client.valid());
  std::string payload(8 * 1024 * 1024, '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>('a' + i % 23);
  // Writing 8 MiB without reading would deadlock any relay that buffers a whole direction.
  std::thread writer([&] {
    send_text(client.get(), payload);
    ::shutdown(client.get(), SHUT_WR);
  });
  std::string back = read_until_eof(client.get());
  writer.join();
  EXPECT_EQ(back.size(), payload.size());
  EXPECT_TRUE(back == payload);
}

TEST(NetForwarder, UnreachableTargetClosesTheClientAndSaysWhy) {
  UniqueFd listener = listen_loopback();
  uint16_t port = port_of(listener.get());
  std::mutex mu;
  std::vector<std::string> errors;
  NetEventSink sink = [&](const NetEvent& e) {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(e.allowed);
    EXPECT_EQ(e.rule, "inference endpoint");
    errors.push_back(e.reason);
  };
  Serving serving([&](int stop) { return serve_forward(listener.get(), {"127.0.0.1", closed_port()}, stop, sink); });
  UniqueFd client = connect_loopback(port);
  ASSERT_TRUE(client.valid());
  EXPECT_EQ(read_until_eof(client.get()), "");
  EXPECT_TRUE(serving.stop().ok());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("forwarding to 127.0.0.1:"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("Connection refused"), std::string::npos) << errors[0];
}

TEST(NetForwarder, InvalidTargetIsAUsageError) {
  UniqueFd listener = listen_loopback();
  auto status = serve_forward(listener.get(), {"", 8080});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().kind, ErrorKind::kUsage);
  EXPECT_FALSE(serve_forward(listener.get(), {"127.0.0.1", 0}).ok());
}

TEST(NetForwarder, BrokenListenerIsAnError) {
  auto status = serve_forward(-1, {"127.0.0.1", 8080});
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("forwarder"), std::string::npos) << status.error().message;
}

TEST(NetForwarder, StopEndsOpenConnections) {
  EchoServer echo;
  UniqueFd listener = listen_loopback();
  uint16_t port = port_of(listener.get());
  Serving serving([&](int stop) { return serve_forward(listener.get(), {"127.0.0.1", echo.port()}, stop); });
  UniqueFd client = connect_loopback(port);
  ASSERT_TRUE(send_text(client.get(), "x"));
  char c;
  ASSERT_EQ(::recv(client.get(), &c, 1, 0), 1);  // the relay is up and idle now
  auto started = std::chrono::steady_clock::now();
  EXPECT_TRUE(serving.stop().ok());
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
  EXPECT_EQ(read_until_eof(client.get()), "");
}

TEST(NetForwarder, NoFdLeakAfterManyConnections) {
  int before = count_open_fds();
  {
    EchoServer echo;
    UniqueFd listener = listen_loopback();
    uint16_t port = port_of(listener.get());
    Serving serving([&](int stop) { return serve_forward(listener.get(), {"127.0.0.1", echo.port()}, stop); });
    for (int i = 0; i < 100; ++i) {
      UniqueFd client = connect_loopback(port);
      ASSERT_TRUE(send_text(client.get(), "ping"));
      if (i % 2 == 0) ::shutdown(client.get(), SHUT_WR);
      char buf[4];
      ASSERT_EQ(::recv(client.get(), buf, 4, MSG_WAITALL), 4);
    }
    EXPECT_TRUE(serving.stop().ok());
  }
  EXPECT_EQ(count_open_fds(), before);
}

}  // namespace
}  // namespace tnk::net
