// AuditWriter, event builders and sha256_hex. The verifier has its own file (audit_verify_test.cc).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "audit/chain.h"
#include "audit/events.h"
#include "audit/sha256.h"
#include "audit/verify.h"
#include "audit/writer.h"
#include "audit_test_util.h"

namespace tnk::audit {
namespace {

using nlohmann::json;
using testing::slurp;
using testing::split_lines;
using testing::TempDir;
namespace fs = std::filesystem;

constexpr int64_t kT0 = 1736935867;
Clock fixed_clock() {
  return [] { return kT0; };
}

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// Restores the umask when a test changed it.
class UmaskGuard {
 public:
  explicit UmaskGuard(mode_t mask) : old_(::umask(mask)) {}
  ~UmaskGuard() { ::umask(old_); }

 private:
  mode_t old_;
};

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Lengths around the block size: where the padding needs one last block or two.
TEST(Sha256Test, PaddingBoundaries) {
  const std::pair<size_t, const char*> vectors[] = {
      {55, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072"},
      {56, "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e"},
      {63, "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2"},
      {64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c"},
      {65, "9537c5fdf120482f7d58d25e9ed583f52c02b4e304ea814db1633ad565aed7e9"},
      {119, "000b48d4edf0fa7bee3c6236ecd2785baa5db4eeb8bb54341b029e0d9fa5fb0c"},
      {120, "13f05a0b594787f5ecd315edc96141bd3243203d1b7d4f0836f37308b276ba98"},
  };
  for (const auto& [length, digest] : vectors) EXPECT_EQ(sha256_hex(std::string(length, 'x')), digest) << length;
}

TEST(AuditWriterTest, CreatesFile0600AndParentDirs0700) {
  TempDir tmp;
  UmaskGuard umask_022(022);
  fs::path log = tmp.path() / "a" / "b" / "audit.ndjson";
  auto w = AuditWriter::open(log);
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(mode_of(tmp.path() / "a"), 0700u);
  EXPECT_EQ(mode_of(tmp.path() / "a" / "b"), 0700u);
  EXPECT_EQ(mode_of(log), 0600u);
  EXPECT_TRUE(fs::is_regular_file(log));
  EXPECT_EQ(w->path(), log);
}

TEST(AuditWriterTest, FileIsExactly0600WhateverTheUmask) {
  TempDir tmp;
  UmaskGuard umask_277(0277);  // would leave 0400 without the explicit fchmod
  fs::path log = tmp.path() / "audit.ndjson";
  ASSERT_TRUE(AuditWriter::open(log).ok());
  EXPECT_EQ(mode_of(log), 0600u);
}

TEST(AuditWriterTest, RefusesSymlinkAndLeavesTargetAlone) {
  TempDir tmp;
  fs::path target = tmp.path() / "target";
  { std::ofstream(target) << "precious\n"; }
  fs::permissions(target, fs::perms::owner_read | fs::perms::owner_write);
  fs::create_symlink(target, tmp.path() / "link");
  auto w = AuditWriter::open(tmp.path() / "link");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().kind, ErrorKind::kPermission);
  EXPECT_NE(w.error().message.find("symbolic link"), std::string::npos) << w.error().message;
  EXPECT_EQ(slurp(target), "precious\n");
}

TEST(AuditWriterTest, RefusesDanglingSymlinkWithoutCreatingItsTarget) {
  TempDir tmp;
  fs::create_symlink(tmp.path() / "elsewhere", tmp.path() / "link");
  EXPECT_FALSE(AuditWriter::open(tmp.path() / "link").ok());
  EXPECT_FALSE(fs::exists(tmp.path() / "elsewhere"));
}

// Security review L6: a link planted in a parent (here two levels up) is refused, not followed.
TEST(AuditWriterTest, RefusesSymlinkedParentAndCreatesNothingBehindIt) {
  TempDir tmp;
  fs::create_directory(tmp.path() / "elsewhere");
  fs::create_directory_symlink(tmp.path() / "elsewhere", tmp.path() / "logs");
  auto w = AuditWriter::open(tmp.path() / "logs" / "sub" / "audit.ndjson");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().kind, ErrorKind::kPermission);
  EXPECT_EQ(w.error().message, "audit log " + (tmp.path() / "logs" / "sub" / "audit.ndjson").string() +
                                   ": refusing to follow " + (tmp.path() / "logs").string() +
                                   ": it is a symbolic link");
  EXPECT_TRUE(fs::is_empty(tmp.path() / "elsewhere"));
}

TEST(AuditWriterTest, RefusesExistingLogWithWrongMode) {
  TempDir tmp;
  fs::path log = tmp.path() / "audit.ndjson";
  { std::ofstream(log) << ""; }
  ::chmod(log.c_str(), 0644);
  auto w = AuditWriter::open(log);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().kind, ErrorKind::kPermission);
  EXPECT_EQ(w.error().message, "refusing to continue audit log " + log.string() + ": its mode is 0644, expected 0600");
  EXPECT_NE(w.error().hint.find("chmod 600"), std::string::npos);
}

TEST(AuditWriterTest, RefusesFifoWithoutBlockingAndDirectory) {
  TempDir tmp;
  fs::path fifo = tmp.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto w = AuditWriter::open(fifo);  // would hang here if open() blocked on the FIFO
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("not a regular file"), std::string::npos) << w.error().message;
  fs::create_directory(tmp.path() / "dir");
  EXPECT_FALSE(AuditWriter::open(tmp.path() / "dir").ok());
}

TEST(AuditWriterTest, ChainContinuesAcrossWriters) {
  TempDir tmp;
  fs::path log = tmp.path() / "audit.ndjson";
  {
    auto w = AuditWriter::open(log, fixed_clock());
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->append(sandbox_start("tnk-p", "ns", "base", "/src/p")).ok());
    ASSERT_TRUE(w->append(sandbox_stop("tnk-p", "user")).ok());
  }
  {
    auto w = AuditWriter::open(log, fixed_clock());
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->append(sandbox_delete("tnk-p")).ok());
    ASSERT_TRUE(w->sync().ok());
  }
  auto lines = split_lines(slurp(log));
  ASSERT_EQ(lines.size(), 3u);
  std::string expected_prev{kGenesisPrev};
  for (size_t i = 0; i < lines.size(); ++i) {
    json j = json::parse(lines[i]);
    EXPECT_EQ(j["seq"], i + 1);
    EXPECT_EQ(j["prev"], expected_prev) << "line " << i + 1;
    expected_prev = sha256_hex(lines[i]);
  }
  auto report = verify_log(log);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok);
  EXPECT_EQ(report->records, 3u);
}

TEST(AuditWriterTest, ClockSeamSetsTsUnlessCallerDid) {
  TempDir tmp;
  fs::path log = tmp.path() / "audit.ndjson";
  auto w = AuditWriter::open(log, fixed_clock());
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->append(sandbox_delete("tnk-p")).ok());
  json with_ts = sandbox_delete("tnk-p");
  with_ts["ts"] = 5;
  ASSERT_TRUE(w->append(with_ts).ok());
  auto lines = split_lines(slurp(log));
  EXPECT_EQ(json::parse(lines[0])["ts"], kT0);
  EXPECT_EQ(json::parse(lines[1])["ts"], 5);

  auto real = AuditWriter::open(tmp.path() / "real.ndjson");
  ASSERT_TRUE(real.ok());
  int64_t before = ::time(nullptr);
  ASSERT_TRUE(real->append(sandbox_delete("tnk-p")).ok());
  int64_t ts = json::parse(slurp(tmp.path() / "real.ndjson"))["ts"];
  EXPECT_GE(ts, before);
  EXPECT_LE(ts, ::time(nullptr));
}

TEST(AuditWriterTest, ExactLineCompactWithSortedKeys) {
  TempDir tmp;
  fs::path log = tmp.path() / "audit.ndjson";
  auto w = AuditWriter::open(log, fixed_clock());
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->append(session_exit("tnk-myproj", 0, std::nullopt)).ok());
  EXPECT_EQ(slurp(log), R"({"container_id":"tnk-myproj","event":"session_exit","exit_code":0,"prev":")" +
                            std::string(kGenesisPrev) + R"(","seq":1,"ts":1736935867})" + "\n");
}

TEST(AuditWriterTest, OneLinePerRecordEvenWithNewlinesInValues) {
  TempDir tmp;
  fs::path log = tmp.path() / "audit.ndjson";
  auto w = AuditWriter::open(log, fixed_clock());
  ASSERT_TRUE(w.ok());
  json odd = {{"zeta", "a\nb\r\nc"}, {"alpha", {{"z", 1}, {"a", 2}}}, {"event", "x"}};
  ASSERT_TRUE(w->append(odd).ok());
  ASSERT_TRUE(w->append(exec_invocation("tnk-p", {"bash", "-c", "echo\nhi"}, false, {}, {})).ok());
  std::string content = slurp(log);
  auto lines = split_lines(content);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(content.back(), '\n');
  for (const auto& line : lines) EXPECT_TRUE(json::accept(line)) << line;
  EXPECT_EQ(lines[0].rfind(R"({"alpha":{"a":2,"z":1},"event":"x","prev":)", 0), 0u) << lines[0];
}

TEST(AuditWriterTest, SeqAndPrevFromTheCallerAreReplaced) {
  TempDir tmp;
  fs::path log = tmp.path() / "audit.ndjson";
  auto w = AuditWriter::open(log, fixed_clock());
  ASSERT_TRUE(w.ok());
  json forged = sandbox_delete("tnk-p");
  forged["seq"] = 99;
  forged["prev"] = "f00";
  ASSERT_TRUE(w->append(forged).ok());
  json j = json::parse(slurp(log));
  EXPECT_EQ(j["seq"], 1);
  EXPECT_EQ(j["prev"], std::string(kGenesisPrev));
}

TEST(AuditWriterTest, RejectsNonObjectRecord) {
  TempDir tmp;
  auto w = AuditWriter::open(tmp.path() / "audit.ndjson");
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(w->append(json::array({1, 2})).ok());
  EXPECT_EQ(slurp(tmp.path() / "audit.ndjson"), "");
}

TEST(AuditWriterTest, ExecInvocationRecordsEnvNamesNeverValues) {
  TempDir tmp;
  fs::path log = tmp.path() / "audit.ndjson";
  // What the CLI has: -e API_KEY=sk-secret-123 -e DEBUG=1. Only the names reach the builder.
  std::map<std::string, std::string> user_env = {{"API_KEY", "sk-secret-123"}, {"DEBUG", "1"}};
  std::vector<std::string> names;
  for (const auto& [name, value] : user_env) names.push_back(name);
  RuntimeEnv runtime = {{"TNK_INFERENCE_URL", "http://10.0.2.2:8080/v1"}};
  std::vector<std::string> argv = {"tnk-agent", "exec", "--", "bash", "-l"};
  auto w = AuditWriter::open(log, fixed_clock());
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->append(exec_invocation("tnk-p", argv, true, runtime, names)).ok());
  std::string content = slurp(log);
  EXPECT_EQ(content.find("sk-secret-123"), std::string::npos);
  json j = json::parse(content);
  EXPECT_EQ(j["user_env_names"], json({"API_KEY", "DEBUG"}));
  EXPECT_EQ(j["argv"], json(argv));
}

TEST(AuditWriterTest, RefusesToContinueLogEndingWithPartialRecord) {
  TempDir tmp;
  fs::path log = tmp.path() / "audit.ndjson";
  {
    auto w = AuditWriter::open(log, fixed_clock());
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->append(sandbox_delete("tnk-p")).ok());
  }
  std::string content = slurp(log);
  testing::overwrite(log, content + content.substr(0, content.size() / 2));
  auto w = AuditWriter::open(log);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("ends with an incomplete record"), std::string::npos);
  EXPECT_NE(w.error().hint.find("tnk audit verify"), std::string::npos);

  testing::overwrite(log, content + "not json\n");
  w = AuditWriter::open(log);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("not an audit record"), std::string::npos) << w.error().message;
}

// The in-memory twins the fuzz targets use: chained_line after chain_head_of writes, byte for byte, what
// the writer appends to a file, and chain_head_of refuses what read_chain_head refuses, with its message.
TEST(AuditWriterTest, ALogBuiltInMemoryIsTheFileTheWriterWrites) {
  TempDir tmp;
  fs::path log = tmp.path() / "audit.ndjson";
  std::vector<json> records = {sandbox_start("tnk-p", "ns", "base", "/src/p"), sandbox_stop("tnk-p", "user"),
                               json{{"event", "custom"}, {"ts", 5}}};
  std::string in_memory;
  {
    auto w = AuditWriter::open(log, fixed_clock());
    ASSERT_TRUE(w.ok());
    for (const json& record : records) {
      ASSERT_TRUE(w->append(record).ok());
      auto head = chain_head_of(in_memory, log);
      ASSERT_TRUE(head.ok()) << head.error().message;
      auto line = chained_line(record, *head, fixed_clock(), log);
      ASSERT_TRUE(line.ok()) << line.error().message;
      in_memory += *line;
    }
  }
  EXPECT_EQ(in_memory, slurp(log));
  EXPECT_FALSE(chained_line(json::array(), ChainHead{}, fixed_clock(), log).ok());

  auto head = chain_head_of("", log);
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->seq, 0u);
  EXPECT_EQ(head->hash, kGenesisPrev);
  for (const std::string& damaged :
       {in_memory + in_memory.substr(0, 20), in_memory + "not json\n", std::string("\n")}) {
    testing::overwrite(log, damaged);
    auto from_file = AuditWriter::open(log);
    auto from_memory = chain_head_of(damaged, log);
    ASSERT_FALSE(from_file.ok());
    ASSERT_FALSE(from_memory.ok());
    EXPECT_EQ(from_memory.error().message, from_file.error().message);
  }
}

// Each child appends `n` records tagged with `who` through `w`, or through its own writer when
// `w` is null. Exits 0 on success.
[[noreturn]] void child_append(AuditWriter* w, const fs::path& log, const std::string& who, int n) {
  std::optional<AuditWriter> own;
  if (w == nullptr) {
    auto opened = AuditWriter::open(log);
    if (!opened.ok()) ::_exit(2);
    own.emplace(std::move(opened).value());
    w = &*own;
  }
  for (int i = 0; i < n; ++i) {
    if (!w->append({{"event", "test"}, {"who", who}, {"i", i}}).ok()) ::_exit(3);
  }
  ::_exit(0);
}

void run_two_children(AuditWriter* shared, const fs::path& log) {
  pid_t a = ::fork();
  ASSERT_GE(a, 0);
  if (a == 0) child_append(shared, log, "a", 200);
  pid_t b = ::fork();
  ASSERT_GE(b, 0);
  if (b == 0) child_append(shared, log, "b", 200);
  for (pid_t pid : {a, b}) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
}

std::map<std::string, int> count_by_who(const fs::path& log) {
  std::map<std::string, int> counts;
  for (const auto& line : split_lines(slurp(log))) counts[json::parse(line).value("who", "")]++;
  return counts;
}

TEST(AuditWriterTest, TwoProcessesAppendingKeepOneChain) {
  TempDir tmp;
  fs::path log = tmp.path() / "audit.ndjson";
  run_two_children(nullptr, log);
  auto report = verify_log(log);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok) << report->problem;
  EXPECT_EQ(report->records, 400u);
  auto counts = count_by_who(log);
  EXPECT_EQ(counts["a"], 200);
  EXPECT_EQ(counts["b"], 200);
}

// A writer inherited across fork() shares the open file (and so the flock) with the parent;
// the children must still exclude each other.
TEST(AuditWriterTest, WriterInheritedAcrossForkKeepsOneChain) {
  TempDir tmp;
  fs::path log = tmp.path() / "audit.ndjson";
  auto w = AuditWriter::open(log);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->append({{"event", "test"}, {"who", "parent"}}).ok());
  run_two_children(&*w, log);
  ASSERT_TRUE(w->append({{"event", "test"}, {"who", "parent"}}).ok());
  auto report = verify_log(log);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok) << report->problem;
  EXPECT_EQ(report->records, 402u);
  EXPECT_EQ(count_by_who(log)["parent"], 2);
}

// Bytes this process has read through read()/pread(), from /proc/self/io.
std::optional<long long> bytes_read() {
  std::ifstream io("/proc/self/io");
  std::string key;
  long long value = 0;
  while (io >> key >> value) {
    if (key == "rchar:") return value;
  }
  return std::nullopt;
}

TEST(AuditWriterTest, ContinuingAHugeLogReadsOnlyItsTail) {
  if (!bytes_read()) GTEST_SKIP() << "/proc/self/io not available";
  TempDir tmp;
  fs::path log = tmp.path() / "audit.ndjson";
  constexpr off_t kHuge = off_t{256} << 20;
  std::string last = json{{"event", "x"}, {"prev", std::string(64, 'a')}, {"seq", 7}, {"ts", 1}}.dump();
  {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, kHuge), 0);  // a sparse first "line" of 256 MiB
    std::string tail = "\n" + last + "\n";
    ASSERT_EQ(::pwrite(fd, tail.data(), tail.size(), kHuge), static_cast<ssize_t>(tail.size()));
    ::close(fd);
  }
  long long before = *bytes_read();
  auto w = AuditWriter::open(log, fixed_clock());
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_TRUE(w->append(sandbox_delete("tnk-p")).ok());
  EXPECT_LT(*bytes_read() - before, 1 << 20);
  std::ifstream in(log, std::ios::binary);
  in.seekg(kHuge + 1 + static_cast<off_t>(last.size()) + 1);
  std::string appended_line;
  ASSERT_TRUE(std::getline(in, appended_line));
  json appended = json::parse(appended_line);
  EXPECT_EQ(appended["seq"], 8);
  EXPECT_EQ(appended["prev"], sha256_hex(last));
}

// Issue 16, item 3: a record the disk has no room for is counted (for the command to fail on) and
// leaves the log ending with its last complete record, so that the next append continues the chain.
TEST(AuditWriter, AFailedAppendIsCountedAndLeavesTheLogComplete) {
  TempDir dir;
  fs::path path = dir.path() / "full.ndjson";
  auto writer = AuditWriter::open(path, fixed_clock());
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(writer->append({{"event", "first"}}).ok());
  EXPECT_EQ(writer->unwritten(), 0);  // the control: nothing lost yet
  const std::string before = slurp(path);
  {
    testing::FileSizeLimit full(before.size() + 16);
    Status lost = writer->append({{"event", "second"}, {"pad", std::string(256, 'x')}});
    ASSERT_FALSE(lost.ok());
    EXPECT_NE(lost.error().message.find("cannot write to audit log " + path.string()), std::string::npos)
        << lost.error().message;
  }
  EXPECT_EQ(writer->unwritten(), 1);
  ASSERT_TRUE(writer->first_failure().has_value());
  EXPECT_EQ(slurp(path), before);
  ASSERT_TRUE(writer->append({{"event", "third"}}).ok());
  auto report = verify_log(path);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok);
  EXPECT_EQ(split_lines(slurp(path)).size(), 2u);
}

}  // namespace
}  // namespace tnk::audit
