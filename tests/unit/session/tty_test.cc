// run_session in tty mode. The "sandbox" terminal is a real pty pair whose master the fake supervisor
// passes; the client's in_fd is the slave of a second pty, so raw mode can be checked from outside
// and its restoration compared with tcgetattr before and after, on every way out.
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>

#include <cstring>
#include <stdexcept>

#include <gtest/gtest.h>

#include "session/client.h"
#include "session_test_util.h"

namespace tnk::session {
namespace {

using testing::FakeServer;
using testing::must_recv;
using testing::Pipe;
using testing::SocketPair;

struct Pty {
  UniqueFd master, slave;
  Pty(unsigned short rows, unsigned short cols) {
    int m = -1, s = -1;
    winsize ws{rows, cols, 0, 0};
    if (::openpty(&m, &s, nullptr, nullptr, &ws) != 0) std::abort();
    master.reset(m);
    slave.reset(s);
  }
};

termios modes(int fd) {
  termios t{};
  EXPECT_EQ(::tcgetattr(fd, &t), 0);
  return t;
}

bool same_modes(const termios& a, const termios& b) {
  return a.c_iflag == b.c_iflag && a.c_oflag == b.c_oflag && a.c_cflag == b.c_cflag && a.c_lflag == b.c_lflag &&
         std::memcmp(a.c_cc, b.c_cc, sizeof(a.c_cc)) == 0;
}

bool is_raw(const termios& t) { return (t.c_lflag & (ICANON | ECHO | ISIG)) == 0 && (t.c_oflag & OPOST) == 0; }

ExecRequest tty_request() {
  ExecRequest r;
  r.argv = {"bash", "-l"};
  r.env = {"TERM=xterm-256color"};
  r.cwd = "/workspace/p";
  r.tty = true;
  return r;
}

// The supervisor's side of a tty exec: checks the request and that the user's terminal is already raw,
// then passes `sandbox_master`.
void accept_tty_exec(int sock, int user_slave, UniqueFd sandbox_master) {
  Message m = must_recv(sock);
  auto req = exec_request_from_json(m.body);
  ASSERT_TRUE(req.ok());
  EXPECT_TRUE(req->tty);
  EXPECT_EQ(req->rows, 30);  // the user's terminal size, not the request's 24x80
  EXPECT_EQ(req->cols, 100);
  EXPECT_TRUE(m.fds.empty());
  EXPECT_TRUE(is_raw(modes(user_slave)));
  int fds[] = {sandbox_master.get()};
  EXPECT_TRUE(send_message(sock, started_event(77), fds).ok());
}

TEST(SessionTty, RelaysThroughThePtyResizesAndRestoresTheTerminal) {
  Pty user(30, 100), sandbox(24, 80);
  termios before = modes(user.slave.get());
  SocketPair sp;
  Resize resized;
  int user_master = user.master.get(), user_slave = user.slave.get(), sandbox_slave = sandbox.slave.get();
  FakeServer server(std::move(sp.server), [&](int sock) {
    accept_tty_exec(sock, user_slave, std::move(sandbox.master));
    testing::write_str(user_master, "hi\n");  // the user types; raw mode passes it on at once
    char line[64] = {};
    ssize_t n = ::read(sandbox_slave, line, sizeof(line) - 1);  // the sandbox's shell reads its line
    EXPECT_EQ(std::string(line, n > 0 ? static_cast<std::size_t>(n) : 0), "hi\n");
    testing::write_str(sandbox_slave, "got hi\n");
    winsize ws{40, 120, 0, 0};
    ::ioctl(user_slave, TIOCSWINSZ, &ws);
    ::kill(::getpid(), SIGWINCH);
    auto r = resize_from_json(must_recv(sock).body);
    if (r.ok()) resized = *r;
    EXPECT_TRUE(send_message(sock, exit_event(0)).ok());
  });
  Pipe out;
  ClientOptions options = testing::client_options(user.slave.get(), out.w.get(), out.w.get());
  auto r = run_session(sp.client.get(), tty_request(), options);
  server.join();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(resized.rows, 40);
  EXPECT_EQ(resized.cols, 120);
  EXPECT_TRUE(same_modes(before, modes(user.slave.get())));
  out.w.reset();
  sandbox.slave.reset();
  // The sandbox pty echoes the typed line, then the shell's answer (ONLCR turns \n into \r\n).
  EXPECT_EQ(testing::read_all(out.r.get(), std::chrono::milliseconds(500)), "hi\r\ngot hi\r\n");
}

TEST(SessionTty, RestoresTheTerminalWhenTheConnectionIsLost) {
  Pty user(30, 100), sandbox(24, 80);
  termios before = modes(user.slave.get());
  SocketPair sp;
  int user_slave = user.slave.get();
  FakeServer server(std::move(sp.server), [&](int sock) {
    accept_tty_exec(sock, user_slave, std::move(sandbox.master));
    ::shutdown(sock, SHUT_RDWR);
  });
  Pipe out;
  auto r =
      run_session(sp.client.get(), tty_request(), testing::client_options(user.slave.get(), out.w.get(), out.w.get()));
  server.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "lost the connection to the sandbox's supervisor");
  EXPECT_TRUE(same_modes(before, modes(user.slave.get())));
}

TEST(SessionTty, RestoresTheTerminalWhenSignalsMakeTheClientGiveUp) {
  Pty user(30, 100), sandbox(24, 80);
  termios before = modes(user.slave.get());
  SocketPair sp;
  int user_slave = user.slave.get();
  bool closed = false;
  FakeServer server(std::move(sp.server), [&](int sock) {
    accept_tty_exec(sock, user_slave, std::move(sandbox.master));
    ::kill(::getpid(), SIGHUP);  // the user's terminal went away
    EXPECT_EQ(*signal_from_json(must_recv(sock).body), SIGHUP);
    ::kill(::getpid(), SIGTERM);
    closed = testing::peer_closes(sock);
  });
  Pipe out;
  auto r =
      run_session(sp.client.get(), tty_request(), testing::client_options(user.slave.get(), out.w.get(), out.w.get()));
  server.join();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 128 + SIGTERM);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(same_modes(before, modes(user.slave.get())));
}

TEST(SessionTty, RestoresTheTerminalWhenAnExceptionEscapes) {
  Pty user(30, 100), sandbox(24, 80);
  termios before = modes(user.slave.get());
  SocketPair sp;
  int user_slave = user.slave.get(), sandbox_slave = sandbox.slave.get();
  bool closed = false;
  FakeServer server(std::move(sp.server), [&](int sock) {
    accept_tty_exec(sock, user_slave, std::move(sandbox.master));
    testing::write_str(sandbox_slave, "output\n");
    closed = testing::peer_closes(sock);  // the client must not leave the session running
  });
  Pipe out;
  ClientOptions options = testing::client_options(user.slave.get(), out.w.get(), out.w.get());
  options.tee = [](int, std::string_view) { throw std::runtime_error("audit log full"); };
  EXPECT_THROW((void)run_session(sp.client.get(), tty_request(), options), std::runtime_error);
  server.join();
  EXPECT_TRUE(closed);
  EXPECT_TRUE(same_modes(before, modes(user.slave.get())));
}

TEST(SessionTty, AStartedEventWithoutATerminalIsAnError) {
  Pty user(30, 100);
  SocketPair sp;
  FakeServer server(std::move(sp.server), [&](int sock) {
    must_recv(sock);
    EXPECT_TRUE(send_message(sock, started_event(1)).ok());
    testing::peer_closes(sock);
  });
  Pipe out;
  auto r =
      run_session(sp.client.get(), tty_request(), testing::client_options(user.slave.get(), out.w.get(), out.w.get()));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "the sandbox's supervisor sent 0 descriptors with 'started', expected the terminal");
}

}  // namespace
}  // namespace tnk::session
