// The control socket itself (listen/connect on a path) and the one-shot ping and stop requests.
#include <sys/stat.h>

#include <fstream>

#include <gtest/gtest.h>

#include "session/control_client.h"
#include "session_test_util.h"

namespace tnk::session {
namespace {

using std::chrono::milliseconds;
using testing::must_recv;
using testing::TempDir;

// A supervisor stand-in: accepts one connection on `listen_fd` and plays `play` on it, on a thread.
class OneShotServer {
 public:
  OneShotServer(int listen_fd, std::function<void(int)> play)
      : thread_([listen_fd, play] {
          auto conn = accept_control(listen_fd);
          ASSERT_TRUE(conn.ok());
          play(conn->get());
        }) {}
  ~OneShotServer() { join(); }
  void join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::thread thread_;
};

TEST(SessionControl, ListensWithMode0600AndReplacesAStaleSocket) {
  TempDir dir;
  auto path = dir.path() / "ctl.sock";
  {
    auto first = listen_control(path);
    ASSERT_TRUE(first.ok()) << first.error().message;
  }  // closed without unlinking: a supervisor that died
  auto again = listen_control(path);
  ASSERT_TRUE(again.ok()) << again.error().message;
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST(SessionControl, RefusesALiveSocketAndANonSocket) {
  TempDir dir;
  auto path = dir.path() / "ctl.sock";
  auto live = listen_control(path);
  ASSERT_TRUE(live.ok());
  auto second = listen_control(path);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().message, "another supervisor is already listening on " + path.string());
  auto file = dir.path() / "file";
  std::ofstream(file) << "x";
  auto not_socket = listen_control(file);
  ASSERT_FALSE(not_socket.ok());
  EXPECT_EQ(not_socket.error().message, "refusing to replace " + file.string() + ": it is not a socket");
}

TEST(SessionControl, ConnectingToNothingIsNotFound) {
  TempDir dir;
  auto missing = connect_control(dir.path() / "ctl.sock");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(missing.error().message, "no supervisor is listening on " + (dir.path() / "ctl.sock").string());
  { ASSERT_TRUE(listen_control(dir.path() / "stale.sock").ok()); }
  auto stale = connect_control(dir.path() / "stale.sock");
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().kind, ErrorKind::kNotFound);
}

TEST(SessionControl, ATooLongPathIsAnError) {
  auto r = connect_control(std::filesystem::path("/tmp") / std::string(200, 'x'));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("is too long for a unix socket"), std::string::npos);
}

TEST(SessionControl, PingReturnsThePong) {
  TempDir dir;
  auto path = dir.path() / "ctl.sock";
  auto listener = listen_control(path);
  ASSERT_TRUE(listener.ok());
  OneShotServer server(listener->get(), [](int sock) {
    Message m = must_recv(sock);
    EXPECT_EQ(m.body, ping_op());
    EXPECT_TRUE(send_message(sock, pong_event("ns", 1234)).ok());
  });
  auto pong = ping(path, milliseconds(2000));
  ASSERT_TRUE(pong.ok()) << pong.error().message;
  EXPECT_EQ((*pong)["backend"], "ns");
  EXPECT_EQ((*pong)["pid"], 1234);
}

TEST(SessionControl, PingTimesOutWhenTheSupervisorIsSilent) {
  TempDir dir;
  auto path = dir.path() / "ctl.sock";
  auto listener = listen_control(path);
  ASSERT_TRUE(listener.ok());
  OneShotServer server(listener->get(), [](int sock) { testing::peer_closes(sock); });
  auto pong = ping(path, milliseconds(200));
  ASSERT_FALSE(pong.ok());
  EXPECT_EQ(pong.error().message, "the sandbox's supervisor on " + path.string() + " did not answer within 200 ms");
}

TEST(SessionControl, PingReportsAVersionMismatch) {
  TempDir dir;
  auto path = dir.path() / "ctl.sock";
  auto listener = listen_control(path);
  ASSERT_TRUE(listener.ok());
  OneShotServer server(listener->get(), [](int sock) {
    must_recv(sock);
    auto pong = pong_event("vm", 1);
    pong["v"] = 3;
    EXPECT_TRUE(send_message(sock, pong).ok());
  });
  auto pong = ping(path, milliseconds(2000));
  ASSERT_FALSE(pong.ok());
  EXPECT_NE(pong.error().message.find("speaks version 3, this tnk speaks version 1"), std::string::npos);
}

TEST(SessionControl, StopWaitsUntilTheSupervisorCloses) {
  TempDir dir;
  auto path = dir.path() / "ctl.sock";
  auto listener = listen_control(path);
  ASSERT_TRUE(listener.ok());
  long long grace = 0;
  bool closed_early = true;
  OneShotServer server(listener->get(), [&](int sock) {
    auto g = stop_grace_from_json(must_recv(sock).body);
    grace = g.ok() ? g->count() : -1;
    EXPECT_TRUE(send_message(sock, stopping_event()).ok());
    closed_early = testing::peer_closes(sock, milliseconds(200));  // the client must still be waiting
  });
  auto stopped = request_stop(path, milliseconds(1500), milliseconds(5000));
  server.join();
  ASSERT_TRUE(stopped.ok()) << stopped.error().message;
  EXPECT_EQ(grace, 1500);
  EXPECT_FALSE(closed_early);
}

TEST(SessionControl, StopTimesOutWhenTheSandboxDoesNotStop) {
  TempDir dir;
  auto path = dir.path() / "ctl.sock";
  auto listener = listen_control(path);
  ASSERT_TRUE(listener.ok());
  OneShotServer server(listener->get(), [](int sock) {
    must_recv(sock);
    EXPECT_TRUE(send_message(sock, stopping_event()).ok());
    testing::peer_closes(sock);
  });
  auto stopped = request_stop(path, milliseconds(100), milliseconds(300));
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().message,
            "the sandbox's supervisor on " + path.string() + " did not stop the sandbox within 300 ms");
}

TEST(SessionControl, StopReportsAnErrorEvent) {
  TempDir dir;
  auto path = dir.path() / "ctl.sock";
  auto listener = listen_control(path);
  ASSERT_TRUE(listener.ok());
  OneShotServer server(listener->get(), [](int sock) {
    must_recv(sock);
    EXPECT_TRUE(send_message(sock, error_event("already stopping", "", 1)).ok());
  });
  auto stopped = request_stop(path, milliseconds(100), milliseconds(2000));
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().message, "already stopping");
}

}  // namespace
}  // namespace tnk::session
