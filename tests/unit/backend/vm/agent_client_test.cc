// The host client against the real agent serve loop (forked, over a socketpair or a unix socket),
// running real host processes: pipes and PTY sessions, exit codes, signals, env/cwd, stdin streaming
// with flow control, concurrency, file copy, and a client that disappears mid-session.
#include "backend/vm/agent_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "agent_test_util.h"
#include "core/files.h"
#include "temp_dir.h"

namespace tnk::vm {
namespace {

using namespace std::chrono_literals;
using agent::testing::ForkedAgent;
using agent::testing::kToken;

struct RunResult {
  std::string out, err;
  SessionExit exit;
};

std::unique_ptr<AgentClient> attach(ForkedAgent& agent) {
  auto client = AgentClient::attach(agent.take_host_end(), kToken, 5s);
  if (!client) ADD_FAILURE() << client.error().message;
  return client ? std::move(*client) : nullptr;
}

agent::ExecRequest request(std::vector<std::string> argv) {
  agent::ExecRequest r;
  r.argv = std::move(argv);
  r.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root"};
  r.cwd = "/";
  r.uid = ::getuid();
  r.gid = ::getgid();
  return r;
}

// Reads both fds to EOF (bounded by 20 s).
void read_all(int out_fd, int err_fd, std::string& out, std::string& err) {
  std::vector<pollfd> fds = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  auto deadline = std::chrono::steady_clock::now() + 20s;
  char buf[65536];
  while ((fds[0].fd >= 0 || fds[1].fd >= 0) && std::chrono::steady_clock::now() < deadline) {
    if (::poll(fds.data(), fds.size(), 200) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[static_cast<size_t>(i)].revents == 0) continue;
      ssize_t n = ::read(fds[static_cast<size_t>(i)].fd, buf, sizeof buf);
      if (n <= 0)
        fds[static_cast<size_t>(i)].fd = -1;
      else
        (i == 0 ? out : err).append(buf, static_cast<size_t>(n));
    }
  }
}

// Runs one pipe session to its end, feeding `input` from a thread.
RunResult run(AgentClient& client, const agent::ExecRequest& r, const std::string& input = {}) {
  auto in = make_pipe(), out = make_pipe(), err = make_pipe();
  if (!in || !out || !err) std::abort();
  std::promise<SessionExit> done;
  SessionIo io{std::move(in->read_end), std::move(out->write_end), std::move(err->write_end), {}};
  auto id = client.start(r, std::move(io), [&](SessionId, const SessionExit& e) { done.set_value(e); });
  EXPECT_TRUE(id.ok()) << (id ? "" : id.error().message);
  std::thread feeder([&, w = std::move(in->write_end)]() mutable {
    (void)write_all(w.get(), input, "stdin");
    w.reset();
  });
  RunResult result;
  read_all(out->read_end.get(), err->read_end.get(), result.out, result.err);
  feeder.join();
  auto f = done.get_future();
  EXPECT_EQ(f.wait_for(20s), std::future_status::ready);
  result.exit = f.get();
  return result;
}

TEST(AgentClientTest, HelloAndPing) {
  ForkedAgent agent;
  auto client = attach(agent);
  ASSERT_TRUE(client);
  EXPECT_EQ(client->agent_name(), "tnk-agent test");
  auto rtt = client->ping();
  ASSERT_TRUE(rtt.ok()) << rtt.error().message;
  EXPECT_LT(rtt->count(), 1000000);
}

TEST(AgentClientTest, WrongTokenIsRefused) {
  ForkedAgent agent;
  auto client = AgentClient::attach(agent.take_host_end(), "not-the-token", 5s);
  ASSERT_FALSE(client.ok());
  EXPECT_NE(client.error().message.find("wrong token"), std::string::npos) << client.error().message;
}

TEST(AgentClientTest, PipesKeepStdoutAndStderrApartAndPassTheExitCode) {
  ForkedAgent agent;
  auto client = attach(agent);
  ASSERT_TRUE(client);
  RunResult r = run(*client, request({"sh", "-c", "echo out; echo err >&2; exit 42"}));
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(r.exit.code, 42);
  EXPECT_EQ(r.exit.signal, 0);
  EXPECT_EQ(r.exit.error, "");
  EXPECT_EQ(run(*client, request({"true"})).exit.code, 0);
  EXPECT_EQ(run(*client, request({"false"})).exit.code, 1);
}

TEST(AgentClientTest, StdinStreamsAMegabyteThroughTheWindow) {
  ForkedAgent agent;
  auto client = attach(agent);
  ASSERT_TRUE(client);
  std::string input;
  for (int i = 0; input.size() < 3 * agent::kStreamWindow; ++i) input += "line " + std::to_string(i) + " abcxyz\n";
  std::string upper = input;
  for (char& c : upper) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  RunResult r = run(*client, request({"tr", "a-z", "A-Z"}), input);
  EXPECT_EQ(r.exit.code, 0);
  EXPECT_EQ(r.out.size(), upper.size());
  EXPECT_TRUE(r.out == upper);
}

TEST(AgentClientTest, LargeOutputArrivesWhole) {
  ForkedAgent agent;
  auto client = attach(agent);
  ASSERT_TRUE(client);
  RunResult r = run(*client, request({"head", "-c", "5000000", "/dev/zero"}));
  EXPECT_EQ(r.exit.code, 0);
  EXPECT_EQ(r.out.size(), 5000000u);
}

TEST(AgentClientTest, MissingProgramIs127WithTheReason) {
  ForkedAgent agent;
  auto client = attach(agent);
  ASSERT_TRUE(client);
  RunResult r = run(*client, request({"no-such-program-tnk"}));
  EXPECT_EQ(r.exit.code, 127);
  EXPECT_NE(r.exit.error.find("no-such-program-tnk"), std::string::npos) << r.exit.error;
  // The PATH searched is the request's, not the agent's.
  agent::ExecRequest no_path = request({"true"});
  no_path.env = {"PATH=/nonexistent"};
  EXPECT_EQ(run(*client, no_path).exit.code, 127);
  agent::ExecRequest bad_cwd = request({"true"});
  bad_cwd.cwd = "/nonexistent-dir-tnk";
  RunResult c = run(*client, bad_cwd);
  EXPECT_EQ(c.exit.code, 126);
  EXPECT_NE(c.exit.error.find("/nonexistent-dir-tnk"), std::string::npos) << c.exit.error;
}

TEST(AgentClientTest, DeathBySignalIs128PlusN) {
  ForkedAgent agent;
  auto client = attach(agent);
  ASSERT_TRUE(client);
  RunResult r = run(*client, request({"sh", "-c", "kill -TERM $$"}));
  EXPECT_EQ(r.exit.code, 128 + SIGTERM);
  EXPECT_EQ(r.exit.signal, SIGTERM);
}

TEST(AgentClientTest, SignalReachesTheSessionsProcessGroup) {
  std::promise<SessionExit> done;  // declared before the client: its callback may run from ~AgentClient
  ForkedAgent agent;
  auto client = attach(agent);
  ASSERT_TRUE(client);
  // The agent handles an exec frame until the program runs, before it reads the next frame: the signal
  // finds sleep running (a shell script could catch it between two commands and lose it).
  auto id = client->start(request({"sleep", "100"}), SessionIo{},
                          [&](SessionId, const SessionExit& e) { done.set_value(e); });
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(client->signal(*id, SIGINT).ok());
  auto f = done.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(f.get().code, 128 + SIGINT);
}

TEST(AgentClientTest, EnvironmentAndCwdAreExactlyTheRequested) {
  ForkedAgent agent;
  auto client = attach(agent);
  ASSERT_TRUE(client);
  agent::ExecRequest r = request({"env"});
  r.env = {"PATH=/usr/bin:/bin", "FOO=bar baz", "EMPTY="};
  r.cwd = "/tmp";
  RunResult e = run(*client, r);
  EXPECT_EQ(e.out, "PATH=/usr/bin:/bin\nFOO=bar baz\nEMPTY=\n");
  r.argv = {"pwd"};
  EXPECT_EQ(run(*client, r).out, "/tmp\n");
}

TEST(AgentClientTest, TtySessionSeesATerminalOfTheRequestedSizeAndResizes) {
  std::promise<SessionExit> done;  // declared before the client: its callback may run from ~AgentClient
  ForkedAgent agent;
  auto client = attach(agent);
  ASSERT_TRUE(client);
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd mine(sv[0]);
  agent::ExecRequest r = request({"sh", "-c", "test -t 0 && test -t 1 && echo is-a-tty; stty size; read x; stty size"});
  r.tty = true;
  r.rows = 33;
  r.cols = 101;
  SessionIo io;
  io.terminal = UniqueFd(sv[1]);
  auto id = client->start(r, std::move(io), [&](SessionId, const SessionExit& e) { done.set_value(e); });
  ASSERT_TRUE(id.ok());
  std::string screen;
  auto read_until = [&](const std::string& needle) {
    char buf[4096];
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (screen.find(needle) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd p{mine.get(), POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      ssize_t n = ::read(mine.get(), buf, sizeof buf);
      if (n <= 0) break;
      screen.append(buf, static_cast<size_t>(n));
    }
    return screen.find(needle) != std::string::npos;
  };
  EXPECT_TRUE(read_until("33 101")) << screen;
  EXPECT_NE(screen.find("is-a-tty"), std::string::npos) << screen;
  ASSERT_TRUE(client->resize(*id, 40, 120).ok());
  ::usleep(100000);  // the resize frame goes before the newline, but let the ioctl land first anyway
  ASSERT_EQ(::write(mine.get(), "\n", 1), 1);
  EXPECT_TRUE(read_until("40 120")) << screen;
  auto f = done.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(f.get().code, 0);
}

TEST(AgentClientTest, ManyConcurrentSessionsAllFinishWithTheirOwnOutput) {
  ForkedAgent agent;
  auto client = attach(agent);
  ASSERT_TRUE(client);
  constexpr int kSessions = 24;
  std::vector<std::future<RunResult>> runs;
  for (int i = 0; i < kSessions; ++i) {
    runs.push_back(std::async(std::launch::async, [&client, i] {
      return run(*client,
                 request({"sh", "-c", "sleep 0.2; echo session-" + std::to_string(i) + "; exit " + std::to_string(i)}));
    }));
  }
  for (int i = 0; i < kSessions; ++i) {
    RunResult r = runs[static_cast<size_t>(i)].get();
    EXPECT_EQ(r.out, "session-" + std::to_string(i) + "\n");
    EXPECT_EQ(r.exit.code, i);
  }
}

TEST(AgentClientTest, PutFileWritesContentModeAndParents) {
  ForkedAgent agent;
  auto client = attach(agent);
  ASSERT_TRUE(client);
  tnk::testing_support::TempDir dir("tnk-agent-put");
  std::string content;
  for (int i = 0; content.size() < 200000; ++i) content += std::to_string(i) + ",";
  agent::FilePut put;
  put.path = (dir.path() / "a" / "b" / "file.txt").string();
  put.mode = 0640;
  put.uid = ::getuid();
  put.gid = ::getgid();
  put.parents = true;
  Status s = client->put_file(put, content);
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto back = read_file(put.path);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(*back == content);
  struct stat st {};
  ASSERT_EQ(::stat(put.path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  put.path = (dir.path() / "missing" / "file").string();
  put.parents = false;
  Status missing = client->put_file(put, "x");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find(put.path), std::string::npos) << missing.error().message;
  EXPECT_TRUE(client->ping().ok());  // the connection survives a failed transfer
}

TEST(AgentClientTest, ClientThatDisappearsTakesItsSessionsAlongAndTheAgentKeepsServing) {
  tnk::testing_support::TempDir dir("tnk-agent-sock");
  std::string path = (dir.path() / "agent.sock").string();
  ForkedAgent agent(path);
  pid_t sleeper = 0;
  {
    auto client = AgentClient::connect(path, kToken);
    ASSERT_TRUE(client.ok()) << client.error().message;
    auto out = make_pipe();
    ASSERT_TRUE(out.ok());
    SessionIo io;
    io.output = std::move(out->write_end);
    auto id = (*client)->start(request({"sh", "-c", "echo $$; exec sleep 1000"}), std::move(io), nullptr);
    ASSERT_TRUE(id.ok());
    char buf[32] = {};
    ASSERT_GT(::read(out->read_end.get(), buf, sizeof buf - 1), 0);
    sleeper = std::atoi(buf);
    ASSERT_GT(sleeper, 0);
    ASSERT_EQ(::kill(sleeper, 0), 0);
  }
  // The agent noticed the end of the connection, killed and reaped the session.
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = ::kill(sleeper, 0) != 0;
    if (!gone) ::usleep(20000);
  }
  EXPECT_TRUE(gone) << "pid " << sleeper << " survived its client";
  auto second = AgentClient::connect(path, kToken);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_TRUE((*second)->ping().ok());
  EXPECT_EQ(run(**second, request({"echo", "again"})).out, "again\n");
}

// Security review L2: a hostile agent floods output for a session whose host reader is gone (each frame
// is acknowledged at once) and never reads those acks. The host cuts the connection once its queue to
// the agent passes the cap, instead of growing it for ever in the supervisor.
TEST(AgentClientTest, L2AnAgentThatStopsReadingIsCutOffAtTheQueueCap) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  agent::testing::RawPeer agent{UniqueFd(sv[1])};
  std::thread handshake([&] {
    if (auto hello = agent.next(); hello && hello->kind() == agent::FrameType::kHello) {
      agent.send(agent::FrameType::kHelloOk, 0, agent::encode_hello_ok({agent::kProtocolVersion, "hostile"}));
    }
  });
  auto client = AgentClient::attach(UniqueFd(sv[0]), kToken, 5s);
  handshake.join();
  ASSERT_TRUE(client.ok()) << client.error().message;
  std::promise<SessionExit> done;
  auto id =
      (*client)->start(request({"true"}), SessionIo{}, [&](SessionId, const SessionExit& e) { done.set_value(e); });
  ASSERT_TRUE(id.ok());
  auto exec = agent.next();
  ASSERT_TRUE(exec && exec->kind() == agent::FrameType::kExec);
  agent.send(agent::FrameType::kStarted, exec->session, agent::encode_started({42}));
  std::string burst;
  for (int i = 0; i < 4096; ++i) burst += agent::encode_frame(agent::FrameType::kStdout, exec->session, "x");
  auto ended = done.get_future();
  auto host_gave_up = [&] { return ended.wait_for(0s) == std::future_status::ready; };
  // Whole frames only: a partial send would be a malformed stream, which the host refuses for that.
  auto flood = [&](const std::string& bytes) {
    for (std::size_t off = 0; off < bytes.size() && !host_gave_up();) {
      ssize_t n = ::send(sv[1], bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        off += static_cast<std::size_t>(n);
      } else {
        pollfd p{sv[1], POLLOUT, 0};
        ::poll(&p, 1, 100);
      }
    }
  };
  // 2 million frames would queue about 50 MB of acks; the cap is 4 MiB.
  for (int i = 0; i < 500 && !host_gave_up(); ++i) flood(burst);
  ASSERT_EQ(ended.wait_for(5s), std::future_status::ready) << "the host still reads and queues acks";
  SessionExit exit = ended.get();
  EXPECT_EQ(exit.code, kExitLost);
  EXPECT_NE(exit.error.find("stopped reading"), std::string::npos) << exit.error;
}

TEST(AgentClientTest, PoweroffIsAcknowledgedAndEndsTheServeLoop) {
  ForkedAgent agent;
  auto client = attach(agent);
  ASSERT_TRUE(client);
  Status off = client->poweroff();
  ASSERT_TRUE(off.ok()) << off.error().message;
  auto status = agent.wait_exit();
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
}

TEST(AgentClientTest, ConnectGivesUpAfterItsTimeoutWhenNobodyListens) {
  tnk::testing_support::TempDir dir("tnk-agent-none");
  ClientOptions options;
  options.connect_timeout = 100ms;
  auto client = AgentClient::connect(dir.path() / "agent.sock", kToken, options);
  ASSERT_FALSE(client.ok());
  EXPECT_NE(client.error().message.find("agent.sock"), std::string::npos);
}

}  // namespace
}  // namespace tnk::vm
