// run_session (non-tty) against a fake supervisor on a thread: streams, exit codes, signals, errors.
#include <signal.h>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "session/client.h"
#include "session_test_util.h"

namespace tnk::session {
namespace {

using testing::FakeServer;
using testing::must_recv;
using testing::Pipe;
using testing::SocketPair;
using Clock = std::chrono::steady_clock;

ExecRequest request(std::vector<std::string> argv) {
  ExecRequest r;
  r.argv = std::move(argv);
  r.env = {"PATH=/usr/bin:/bin"};
  r.cwd = "/workspace/p";
  return r;
}

// The client's own stdio, as pipes: the test writes `in` and reads `out` / `err`.
struct Stdio {
  Pipe in, out, err;
  ClientOptions options() const { return testing::client_options(in.r.get(), out.w.get(), err.w.get()); }
  void close_writers() {
    out.w.reset();
    err.w.reset();
  }
};

// The server's half of the exec handshake: the request (checked) and its three descriptors.
Message accept_exec(int sock) {
  Message m = must_recv(sock);
  EXPECT_EQ(m.body.value("op", ""), "exec");
  EXPECT_TRUE(check_version(m.body, "the client").ok());
  EXPECT_TRUE(exec_request_from_json(m.body).ok());
  EXPECT_EQ(m.fds.size(), 3u);
  if (m.fds.size() != 3) m.fds.resize(3);
  EXPECT_TRUE(send_message(sock, started_event(4242)).ok());
  return m;
}

TEST(SessionClient, EchoesStdinToStdoutAndEndsAtStdinEof) {
  SocketPair sp;
  FakeServer server(std::move(sp.server), [](int sock) {
    Message m = accept_exec(sock);
    std::string input = testing::read_all(m.fds[0].get());  // ends only when the client closes stdin
    testing::write_str(m.fds[1].get(), input);
    m.fds.clear();
    EXPECT_TRUE(send_message(sock, exit_event(0)).ok());
  });
  Stdio io;
  testing::write_str(io.in.w.get(), "hello\nworld\n");
  io.in.w.reset();
  auto r = run_session(sp.client.get(), request({"cat"}), io.options());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_FALSE(r->refused);
  io.close_writers();
  EXPECT_EQ(testing::read_all(io.out.r.get()), "hello\nworld\n");
}

TEST(SessionClient, KeepsStdoutAndStderrApartAndTeesBoth) {
  SocketPair sp;
  FakeServer server(std::move(sp.server), [](int sock) {
    Message m = accept_exec(sock);
    testing::write_str(m.fds[1].get(), "to out\n");
    testing::write_str(m.fds[2].get(), "to err\n");
    m.fds.clear();
    EXPECT_TRUE(send_message(sock, exit_event(0)).ok());
  });
  Stdio io;
  io.in.w.reset();
  std::string teed[3];
  ClientOptions options = io.options();
  options.tee = [&](int stream, std::string_view bytes) { teed[stream].append(bytes); };
  auto r = run_session(sp.client.get(), request({"sh"}), options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  io.close_writers();
  EXPECT_EQ(testing::read_all(io.out.r.get()), "to out\n");
  EXPECT_EQ(testing::read_all(io.err.r.get()), "to err\n");
  EXPECT_EQ(teed[1], "to out\n");
  EXPECT_EQ(teed[2], "to err\n");
}

// A silent stretch (an npm install during provisioning) is reported by on_quiet, again and again while
// it lasts. The fake server stays silent until it has seen two ticks, so the test does not race a clock.
TEST(SessionClient, CallsOnQuietWhileTheSessionIsSilent) {
  SocketPair sp;
  std::atomic<int> ticks = 0;
  FakeServer server(std::move(sp.server), [&](int sock) {
    Message m = accept_exec(sock);
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (ticks < 2 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    testing::write_str(m.fds[1].get(), "done\n");
    m.fds.clear();
    EXPECT_TRUE(send_message(sock, exit_event(0)).ok());
  });
  Stdio io;
  io.in.w.reset();
  ClientOptions options = io.options();
  options.quiet_every = std::chrono::milliseconds(20);
  options.on_quiet = [&] { ++ticks; };
  auto r = run_session(sp.client.get(), request({"sh"}), options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_GE(ticks, 2);
  io.close_writers();
  EXPECT_EQ(testing::read_all(io.out.r.get()), "done\n");
}

TEST(SessionClient, ReturnsTheSessionsExitCode) {
  SocketPair sp;
  FakeServer server(std::move(sp.server), [](int sock) {
    Message m = accept_exec(sock);
    EXPECT_TRUE(send_message(sock, exit_event(42)).ok());
  });
  Stdio io;
  auto r = run_session(sp.client.get(), request({"false"}), io.options());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 42);
}

// A session a stop of the sandbox ended says so, so that the CLI can tell it from the command's own end.
TEST(SessionClient, SaysWhenAStopOfTheSandboxEndedTheSession) {
  for (bool stopped : {false, true}) {
    SocketPair sp;
    FakeServer server(std::move(sp.server), [stopped](int sock) {
      Message m = accept_exec(sock);
      EXPECT_TRUE(send_message(sock, exit_event(143, stopped)).ok());
    });
    Stdio io;
    auto r = run_session(sp.client.get(), request({"sleep", "1000"}), io.options());
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->exit_code, 143);
    EXPECT_EQ(r->sandbox_stopped, stopped);
  }
}

// An error after "started" is the sandbox failing under the session (a vm whose disk's host file system
// filled, supervisor/engine.h failure()): the session fails with it, not as a refused program.
TEST(SessionClient, AnErrorAfterTheStartFailsTheSessionWithIt) {
  SocketPair sp;
  FakeServer server(std::move(sp.server), [](int sock) {
    Message m = accept_exec(sock);
    m.fds.clear();
    EXPECT_TRUE(send_message(sock, error_event("the vm's disk /s/disk.qcow2 cannot grow", "free some space", 1)).ok());
  });
  Stdio io;
  io.in.w.reset();
  auto r = run_session(sp.client.get(), request({"sh"}), io.options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "the vm's disk /s/disk.qcow2 cannot grow");
  EXPECT_EQ(r.error().hint, "free some space");
}

TEST(SessionClient, ForwardsSigintAndReturns130) {
  SocketPair sp;
  int forwarded = 0;
  FakeServer server(std::move(sp.server), [&](int sock) {
    Message m = accept_exec(sock);
    ::kill(::getpid(), SIGINT);  // as if the user pressed Ctrl-C at the client
    auto sig = signal_from_json(must_recv(sock).body);
    forwarded = sig.ok() ? *sig : -1;
    EXPECT_TRUE(send_message(sock, exit_event(128 + SIGINT)).ok());
  });
  Stdio io;
  auto r = run_session(sp.client.get(), request({"sleep", "100"}), io.options());
  server.join();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(forwarded, SIGINT);
  EXPECT_EQ(r->exit_code, 130);
}

TEST(SessionClient, ASecondSignalWithinOneSecondAbandonsTheSession) {
  SocketPair sp;
  bool closed = false;
  FakeServer server(std::move(sp.server), [&](int sock) {
    Message m = accept_exec(sock);
    ::kill(::getpid(), SIGTERM);
    EXPECT_EQ(*signal_from_json(must_recv(sock).body), SIGTERM);
    ::kill(::getpid(), SIGTERM);
    closed = testing::peer_closes(sock);  // the real supervisor kills the process group here
  });
  Stdio io;
  auto start = Clock::now();
  auto r = run_session(sp.client.get(), request({"stubborn"}), io.options());
  server.join();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 128 + SIGTERM);
  EXPECT_TRUE(closed);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
}

TEST(SessionClient, AnErrorEventCarriesItsExitCode) {
  SocketPair sp;
  FakeServer server(std::move(sp.server), [](int sock) {
    Message m = must_recv(sock);
    EXPECT_TRUE(send_message(sock, error_event("command not found: nope", "check the name", 127)).ok());
    ::shutdown(sock, SHUT_RDWR);
  });
  Stdio io;
  auto r = run_session(sp.client.get(), request({"nope"}), io.options());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 127);
  ASSERT_TRUE(r->refused);
  EXPECT_EQ(r->refused->message, "command not found: nope");
  EXPECT_EQ(r->refused->hint, "check the name");
  EXPECT_EQ(r->refused->kind, ErrorKind::kNotFound);
}

TEST(SessionClient, AVersionMismatchIsReportedWithBothVersions) {
  SocketPair sp;
  FakeServer server(std::move(sp.server), [](int sock) {
    Message m = must_recv(sock);
    auto started = started_event(1);
    started["v"] = 2;
    EXPECT_TRUE(send_message(sock, started).ok());
    EXPECT_TRUE(testing::peer_closes(sock));
  });
  Stdio io;
  auto r = run_session(sp.client.get(), request({"true"}), io.options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "control protocol version mismatch: the supervisor speaks version 2, this tnk speaks version 1");
}

TEST(SessionClient, LosingTheConnectionBeforeTheExitEventIsAnError) {
  SocketPair sp;
  FakeServer server(std::move(sp.server), [](int sock) {
    Message m = accept_exec(sock);
    ::shutdown(sock, SHUT_RDWR);
  });
  Stdio io;
  auto r = run_session(sp.client.get(), request({"true"}), io.options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "lost the connection to the sandbox's supervisor");
  EXPECT_FALSE(r.error().hint.empty());
}

TEST(SessionClient, ABackgroundWriterDoesNotKeepTheClientWaiting) {
  SocketPair sp;
  FakeServer server(std::move(sp.server), [](int sock) {
    Message m = accept_exec(sock);
    testing::write_str(m.fds[1].get(), "done\n");
    EXPECT_TRUE(send_message(sock, exit_event(0)).ok());
    testing::peer_closes(sock);  // keeps stdout's write end open until the test is over
  });
  Stdio io;
  auto start = Clock::now();
  auto r = run_session(sp.client.get(), request({"sh", "-c", "sleep 100 & echo done"}), io.options());
  auto took = Clock::now() - start;
  sp.client.reset();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_LT(took, std::chrono::seconds(1));
  io.close_writers();
  EXPECT_EQ(testing::read_all(io.out.r.get()), "done\n");
}

TEST(SessionClient, AClosedStdoutClosesTheSessionsStdoutInsteadOfCrashing) {
  SocketPair sp;
  bool got_epipe = false;
  FakeServer server(std::move(sp.server), [&](int sock) {
    Message m = accept_exec(sock);
    std::string chunk(4096, 'y');
    for (int i = 0; i < 10000 && !got_epipe; ++i) {  // `yes | head -1`: yes must get EPIPE
      got_epipe = ::write(m.fds[1].get(), chunk.data(), chunk.size()) < 0 && errno == EPIPE;
    }
    EXPECT_TRUE(send_message(sock, exit_event(128 + SIGPIPE)).ok());
  });
  Stdio io;
  io.out.r.reset();  // the reader of tnk's stdout went away
  auto r = run_session(sp.client.get(), request({"yes"}), io.options());
  server.join();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(got_epipe);
  EXPECT_EQ(r->exit_code, 141);
}

}  // namespace
}  // namespace tnk::session
