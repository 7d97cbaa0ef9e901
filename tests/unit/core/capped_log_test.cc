// What a sandbox can make tnk log (security review M5). CappedLog: it stays within two files of `cap`
// bytes, and nothing is lost while the total is below the cap. LogDrain: a pipe's or a socket's bytes
// reach the capped log, what is still buffered when it is stopped is kept, it ends without a writer, and
// its thread takes no signal (a supervisor's signalfd must see them all).
#include "core/capped_log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <set>

#include "core/files.h"
#include "core/log_drain.h"
#include "temp_dir.h"

namespace tnk {
namespace {

namespace fs = std::filesystem;
using testing_support::TempDir;

std::string text_of(const fs::path& path) {
  auto text = read_file(path);
  return text ? *text : "<missing>";
}

// The descriptor flags of this process's open descriptor on `path` (-1: none is open).
int fd_flags_of(const fs::path& path) {
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (fs::read_symlink(entry.path(), ec) == path) return ::fcntl(std::stoi(entry.path().filename()), F_GETFD);
  }
  return -1;
}

TEST(CappedLogTest, KeepsEverythingBelowTheCapInOneFile) {
  TempDir tmp;
  auto log = CappedLog::open(tmp.path() / "x.log", 100, true);
  ASSERT_TRUE(log.ok()) << log.error().message;
  ASSERT_TRUE(log->append("first line\n").ok());
  ASSERT_TRUE(log->append("second line\n").ok());
  EXPECT_EQ(text_of(tmp.path() / "x.log"), "first line\nsecond line\n");
  EXPECT_FALSE(fs::exists(tmp.path() / "x.log.1"));
}

TEST(CappedLogTest, AWriteAcrossTheCapFillsTheFileAndGoesOnInTheNext) {
  TempDir tmp;
  auto log = CappedLog::open(tmp.path() / "x.log", 10, true);
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE(log->append("12345678").ok());
  ASSERT_TRUE(log->append("ABCDEF").ok());
  EXPECT_EQ(text_of(tmp.path() / "x.log.1"), "12345678AB");
  EXPECT_EQ(text_of(tmp.path() / "x.log"), "CDEF");
}

TEST(CappedLogTest, ExactlyTheCapStaysInOneFile) {
  TempDir tmp;
  auto log = CappedLog::open(tmp.path() / "x.log", 10, true);
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE(log->append("0123456789").ok());
  EXPECT_EQ(text_of(tmp.path() / "x.log"), "0123456789");
  EXPECT_FALSE(fs::exists(tmp.path() / "x.log.1"));
}

TEST(CappedLogTest, ManyWritesKeepTwoFilesUnderTheCapHoldingTheLatestBytes) {
  TempDir tmp;
  auto log = CappedLog::open(tmp.path() / "x.log", 100, true);
  ASSERT_TRUE(log.ok());
  std::string all;
  for (int i = 0; i < 1000; ++i) {
    std::string piece = std::to_string(i) + (i % 7 == 0 ? std::string(150, 'x') : "") + "\n";
    all += piece;
    ASSERT_TRUE(log->append(piece).ok());
  }
  std::string older = text_of(tmp.path() / "x.log.1"), current = text_of(tmp.path() / "x.log");
  EXPECT_EQ(older.size(), 100u);
  EXPECT_LE(current.size(), 100u);
  EXPECT_TRUE(all.ends_with(older + current));
  size_t files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(tmp.path())) ++files;
  EXPECT_EQ(files, 2u);
}

TEST(CappedLogTest, OneWriteOfManyCapsKeepsOnlyTheLastTwoPieces) {
  TempDir tmp;
  auto log = CappedLog::open(tmp.path() / "x.log", 4, true);
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE(log->append("aaaabbbbccccdd").ok());
  EXPECT_EQ(text_of(tmp.path() / "x.log.1"), "cccc");
  EXPECT_EQ(text_of(tmp.path() / "x.log"), "dd");
}

TEST(CappedLogTest, FreshStartsEmptyAndDropsTheOldRotation) {
  TempDir tmp;
  ASSERT_TRUE(write_file_atomic(tmp.path() / "x.log", "old run\n").ok());
  ASSERT_TRUE(write_file_atomic(tmp.path() / "x.log.1", "older run\n").ok());
  auto log = CappedLog::open(tmp.path() / "x.log", 100, true);
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE(log->append("new\n").ok());
  EXPECT_EQ(text_of(tmp.path() / "x.log"), "new\n");
  EXPECT_FALSE(fs::exists(tmp.path() / "x.log.1"));
}

TEST(CappedLogTest, ContinuingCountsWhatTheFileHoldsAgainstTheCap) {
  TempDir tmp;
  ASSERT_TRUE(write_file_atomic(tmp.path() / "x.log", "12345678").ok());
  auto log = CappedLog::open(tmp.path() / "x.log", 10, false);
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE(log->append("ABC").ok());
  EXPECT_EQ(text_of(tmp.path() / "x.log.1"), "12345678AB");
  EXPECT_EQ(text_of(tmp.path() / "x.log"), "C");
}

TEST(CappedLogTest, FilesAreTheOwnersOnlyAndClosedOnExec) {
  TempDir tmp;
  auto log = CappedLog::open(tmp.path() / "x.log", 4, true);
  ASSERT_TRUE(log.ok());
  EXPECT_NE(fd_flags_of(tmp.path() / "x.log") & FD_CLOEXEC, 0);
  ASSERT_TRUE(log->append("123456").ok());  // rotated: a new descriptor
  int flags = fd_flags_of(tmp.path() / "x.log");
  ASSERT_GE(flags, 0);
  EXPECT_NE(flags & FD_CLOEXEC, 0);
  struct stat st {};
  ASSERT_EQ(::stat((tmp.path() / "x.log").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(CappedLogTest, RefusesASymbolicLinkAtThePath) {
  TempDir tmp;
  ASSERT_TRUE(write_file_atomic(tmp.path() / "target", "kept\n").ok());
  fs::create_symlink(tmp.path() / "target", tmp.path() / "x.log");
  EXPECT_FALSE(CappedLog::open(tmp.path() / "x.log", 100, false).ok());
  EXPECT_EQ(text_of(tmp.path() / "target"), "kept\n");
  // The control: a plain file there opens.
  fs::remove(tmp.path() / "x.log");
  EXPECT_TRUE(CappedLog::open(tmp.path() / "x.log", 100, false).ok());
}

TEST(CappedLogTest, RotationReplacesALinkAtTheOldNameNotItsTarget) {
  TempDir tmp;
  ASSERT_TRUE(write_file_atomic(tmp.path() / "target", "kept\n").ok());
  fs::create_symlink(tmp.path() / "target", tmp.path() / "x.log.1");
  auto log = CappedLog::open(tmp.path() / "x.log", 4, false);
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE(log->append("123456").ok());
  EXPECT_EQ(text_of(tmp.path() / "target"), "kept\n");
  EXPECT_FALSE(fs::is_symlink(tmp.path() / "x.log.1"));
  EXPECT_EQ(text_of(tmp.path() / "x.log.1"), "1234");
}

TEST(CappedLogTest, AZeroCapIsRefused) {
  TempDir tmp;
  EXPECT_FALSE(CappedLog::open(tmp.path() / "x.log", 0, true).ok());
  EXPECT_TRUE(CappedLog::open(tmp.path() / "x.log", 1, true).ok());
}

CappedLog open_log(const fs::path& path, uint64_t cap = 1 << 20) {
  auto log = CappedLog::open(path, cap, true);
  EXPECT_TRUE(log.ok());
  return std::move(*log);
}

sockaddr_un address_of(const fs::path& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  return addr;
}

UniqueFd listen_at(const fs::path& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr = address_of(path);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(::listen(fd.get(), 1), 0);
  return fd;
}

UniqueFd connect_to(const fs::path& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr = address_of(path);
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

std::set<std::string> tasks() {
  std::set<std::string> ids;
  for (const auto& entry : fs::directory_iterator("/proc/self/task")) ids.insert(entry.path().filename());
  return ids;
}

TEST(LogDrainTest, CopiesAPipeUntilItsEnd) {
  TempDir tmp;
  auto pipe = make_pipe();
  ASSERT_TRUE(pipe.ok());
  auto drain = LogDrain::start(std::move(pipe->read_end), open_log(tmp.path() / "x.log"));
  ASSERT_TRUE(drain.ok()) << drain.error().message;
  std::string all;
  for (int i = 0; i < 2000; ++i) all += "line " + std::to_string(i) + "\n";
  ASSERT_TRUE(write_all(pipe->write_end.get(), all, "pipe").ok());
  pipe->write_end.reset();
  drain->reset();  // joins the thread, which had already ended at the pipe's end
  EXPECT_EQ(text_of(tmp.path() / "x.log"), all);
}

TEST(LogDrainTest, StoppingKeepsWhatThePipeStillHolds) {
  TempDir tmp;
  auto pipe = make_pipe();
  ASSERT_TRUE(pipe.ok());
  auto drain = LogDrain::start(std::move(pipe->read_end), open_log(tmp.path() / "x.log"));
  ASSERT_TRUE(drain.ok());
  ASSERT_TRUE(write_all(pipe->write_end.get(), "last words\n", "pipe").ok());
  drain->reset();  // the write end is still open: no end of the pipe, only the stop
  EXPECT_EQ(text_of(tmp.path() / "x.log"), "last words\n");
}

TEST(LogDrainTest, AWriterOfManyCapsLeavesTwoFilesUnderTheCap) {
  TempDir tmp;
  auto pipe = make_pipe();
  ASSERT_TRUE(pipe.ok());
  auto drain = LogDrain::start(std::move(pipe->read_end), open_log(tmp.path() / "x.log", 64 << 10));
  ASSERT_TRUE(drain.ok());
  std::string flood(1 << 20, 'x');  // 16 caps' worth
  flood += "END";
  ASSERT_TRUE(write_all(pipe->write_end.get(), flood, "pipe").ok());
  pipe->write_end.reset();
  drain->reset();
  EXPECT_EQ(text_of(tmp.path() / "x.log.1"), std::string(64 << 10, 'x'));
  EXPECT_EQ(text_of(tmp.path() / "x.log"), "END");
}

TEST(LogDrainTest, AcceptsOneWriterOnASocket) {
  TempDir tmp;
  const fs::path socket = tmp.path() / "s.sock";
  auto drain = LogDrain::accept_one(listen_at(socket), open_log(tmp.path() / "x.log"));
  ASSERT_TRUE(drain.ok());
  UniqueFd writer = connect_to(socket);
  ASSERT_TRUE(write_all(writer.get(), "console text\n", "socket").ok());
  writer.reset();
  drain->reset();
  EXPECT_EQ(text_of(tmp.path() / "x.log"), "console text\n");
}

TEST(LogDrainTest, AWriterThatConnectedBeforeTheStopIsStillCopied) {
  TempDir tmp;
  const fs::path socket = tmp.path() / "s.sock";
  UniqueFd listener = listen_at(socket);
  UniqueFd writer = connect_to(socket);  // pending in the backlog before the drain even starts
  ASSERT_TRUE(write_all(writer.get(), "early boot\n", "socket").ok());
  auto drain = LogDrain::accept_one(std::move(listener), open_log(tmp.path() / "x.log"));
  ASSERT_TRUE(drain.ok());
  drain->reset();
  EXPECT_EQ(text_of(tmp.path() / "x.log"), "early boot\n");
}

TEST(LogDrainTest, EndsWhenNobodyEverConnects) {
  TempDir tmp;
  auto drain = LogDrain::accept_one(listen_at(tmp.path() / "s.sock"), open_log(tmp.path() / "x.log"));
  ASSERT_TRUE(drain.ok());
  drain->reset();  // returns: the test would hang otherwise
  EXPECT_EQ(text_of(tmp.path() / "x.log"), "");
}

TEST(LogDrainTest, ItsThreadBlocksEverySignal) {
  TempDir tmp;
  auto pipe = make_pipe();
  ASSERT_TRUE(pipe.ok());
  std::set<std::string> before = tasks();
  auto drain = LogDrain::start(std::move(pipe->read_end), open_log(tmp.path() / "x.log"));
  ASSERT_TRUE(drain.ok());
  std::string added;
  for (const auto& id : tasks()) {
    if (!before.contains(id)) added = id;
  }
  ASSERT_FALSE(added.empty());
  std::ifstream status("/proc/self/task/" + added + "/status");
  std::string line;
  unsigned long long blocked = 0;
  while (std::getline(status, line)) {
    if (line.starts_with("SigBlk:")) blocked = std::stoull(line.substr(7), nullptr, 16);
  }
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGPIPE}) {
    EXPECT_NE(blocked & (1ull << (sig - 1)), 0u) << "signal " << sig;
  }
  // The control: this (the test's) thread still takes them.
  sigset_t mine;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &mine);
  EXPECT_EQ(sigismember(&mine, SIGTERM), 0);
}

}  // namespace
}  // namespace tnk
