// The sandbox record and its directory: atomic saves, corrupt records, the per-sandbox lock, the
// supervisor's lock.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/files.h"
#include "state/layout.h"
#include "state/liveness.h"
#include "state/store.h"

namespace tnk::state {
namespace {
namespace fs = std::filesystem;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tnk-state-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  SandboxRecord sample() const {
    SandboxRecord r;
    r.id = "tnk-demo";
    r.backend = BackendKind::kNs;
    r.project_dir = "/home/u/code/demo";
    r.profile = "pi";
    r.mount_point = "/workspace";
    r.created_at = 1700000000;
    r.started_at = 1700000100;
    return r;
  }

  fs::path dir_;
};

TEST_F(StoreTest, MissingRecordIsAbsentNotAnError) {
  Store store(dir_ / "sandboxes");
  auto loaded = store.load("tnk-nothing");
  ASSERT_TRUE(loaded.ok());
  EXPECT_FALSE(loaded->has_value());
  auto ids = store.list_ids();
  ASSERT_TRUE(ids.ok());
  EXPECT_TRUE(ids->empty());
}

TEST_F(StoreTest, SaveThenLoadRoundTripsWithPrivateModes) {
  Store store(dir_ / "sandboxes");
  ASSERT_TRUE(store.save(sample()).ok());
  auto loaded = store.load("tnk-demo");
  ASSERT_TRUE(loaded.ok() && loaded->has_value());
  const SandboxRecord& r = **loaded;
  EXPECT_EQ(r.backend, BackendKind::kNs);
  EXPECT_EQ(r.project_dir, fs::path("/home/u/code/demo"));
  EXPECT_EQ(r.started_at, std::optional<int64_t>(1700000100));
  EXPECT_FALSE(r.stopped_at.has_value());
  struct stat st {};
  ASSERT_EQ(::stat(store.file("tnk-demo", kRecordFile).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(store.dir("tnk-demo").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // No temporary file is left beside the record.
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(store.dir("tnk-demo"))) ++entries;
  EXPECT_EQ(entries, 1u);
}

TEST_F(StoreTest, CorruptRecordNamesTheFileAndHowToRecover) {
  Store store(dir_ / "sandboxes");
  ASSERT_TRUE(make_dirs(store.dir("tnk-demo")).ok());
  std::ofstream(store.file("tnk-demo", kRecordFile)) << "{ not json";
  auto loaded = store.load("tnk-demo");
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message.find(store.file("tnk-demo", kRecordFile).string()), std::string::npos);
  EXPECT_NE(loaded.error().message.find("is corrupt"), std::string::npos);
  EXPECT_NE(loaded.error().hint.find("tnk sandbox delete"), std::string::npos);
}

// Issue 16, item 4: a record others can write (or a link in its place) is refused, not trusted.
TEST_F(StoreTest, RecordOthersCouldHaveWrittenIsRefused) {
  Store store(dir_ / "sandboxes");
  ASSERT_TRUE(store.save(sample()).ok());
  const fs::path path = store.file("tnk-demo", kRecordFile);
  ASSERT_TRUE(store.load("tnk-demo").ok());  // the control: the record as tnk wrote it
  ASSERT_EQ(::chmod(path.c_str(), 0666), 0);
  auto writable = store.load("tnk-demo");
  ASSERT_FALSE(writable.ok());
  EXPECT_EQ(exit_code_for(writable.error().kind), kExitPermission);
  EXPECT_NE(writable.error().message.find("refusing to read sandbox record " + path.string() + ": its mode is 0666"),
            std::string::npos)
      << writable.error().message;
  fs::rename(path, dir_ / "elsewhere.json");
  ASSERT_EQ(::chmod((dir_ / "elsewhere.json").c_str(), 0600), 0);
  fs::create_symlink(dir_ / "elsewhere.json", path);
  auto linked = store.load("tnk-demo");
  ASSERT_FALSE(linked.ok());
  EXPECT_NE(linked.error().message.find("symbolic link"), std::string::npos) << linked.error().message;
}

TEST_F(StoreTest, RecordFromANewerTnkIsRefused) {
  auto r = record_from_json_text(R"({"schema": 99})", "/x/sandbox.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("newer tnk (schema 99)"), std::string::npos);
}

TEST_F(StoreTest, RecordWithABadFieldNamesTheFieldAndTheFile) {
  nlohmann::json doc = record_to_json(sample());
  doc.erase("mount_point");
  auto missing = record_from_json_text(doc.dump(), "/x/sandbox.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "sandbox record /x/sandbox.json is corrupt: field 'mount_point' is missing");
  EXPECT_NE(missing.error().hint.find("tnk sandbox delete"), std::string::npos);
  doc = record_to_json(sample());
  doc["created_at"] = "yesterday";
  auto wrong = record_from_json_text(doc.dump(), "/x/sandbox.json");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().message, "sandbox record /x/sandbox.json is corrupt: field 'created_at' must be an integer");
}

TEST_F(StoreTest, ListIdsIsSortedAndRemoveDeletesTheDirectory) {
  Store store(dir_ / "sandboxes");
  auto b = sample();
  b.id = "tnk-b";
  auto a = sample();
  a.id = "tnk-a";
  ASSERT_TRUE(store.save(b).ok());
  ASSERT_TRUE(store.save(a).ok());
  auto ids = store.list_ids();
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<std::string>{"tnk-a", "tnk-b"}));
  ASSERT_TRUE(store.remove("tnk-a").ok());
  EXPECT_FALSE(fs::exists(store.dir("tnk-a")));
}

// A delete renames the directory away before it removes it; what a delete cut short left under that
// name is not a sandbox, and the next delete, or a new sandbox, removes it.
TEST_F(StoreTest, WhatADeleteCutShortLeftIsNoSandboxAndTheNextDeleteRemovesIt) {
  Store store(dir_ / "sandboxes");
  auto a = sample();
  a.id = "tnk-a";
  ASSERT_TRUE(store.save(a).ok());
  fs::path left = dir_ / "sandboxes" / ".deleting-tnk-old.4242";
  fs::create_directories(left / "upper" / "home");
  auto ids = store.list_ids();
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<std::string>{"tnk-a"}));
  ASSERT_TRUE(store.remove("tnk-a").ok());
  EXPECT_FALSE(fs::exists(left));
  EXPECT_TRUE(fs::is_empty(dir_ / "sandboxes"));
  EXPECT_TRUE(store.remove("tnk-never-was").ok());
  fs::create_directories(left);  // ... and so does the creation of a sandbox
  ASSERT_TRUE(store.save(a).ok());
  EXPECT_FALSE(fs::exists(left));
  // ... also under its lock, which a start takes first and which makes the sandbox's directory (the
  // vm fault injector found a start that made it anew and kept the leftover).
  ASSERT_TRUE(store.remove("tnk-a").ok());
  fs::create_directories(left);
  std::ostringstream err;
  Log log(err);
  auto lock = store.lock("tnk-a", log);
  ASSERT_TRUE(lock.ok());
  ASSERT_TRUE(store.save(a).ok());
  EXPECT_FALSE(fs::exists(left));
}

// The lock is an flock: a second process waits, then times out with a clear message; the
// kernel releases it when the holder dies (no stale lock file to clean up: the original's bug 14).
TEST_F(StoreTest, LockExcludesOtherProcessesAndDiesWithItsHolder) {
  Store store(dir_ / "sandboxes");
  std::ostringstream err;
  Log log(err);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t holder = ::fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    auto lock = store.lock("tnk-demo", log);
    char c = lock.ok() ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    ::pause();  // holds the lock until killed
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  auto busy = store.lock("tnk-demo", log, std::chrono::milliseconds(100));
  EXPECT_FALSE(busy.ok());
  if (!busy.ok()) {
    EXPECT_NE(busy.error().message.find("timed out waiting for lock"), std::string::npos);
  }
  EXPECT_NE(err.str().find("waiting for another tnk command to finish with tnk-demo"), std::string::npos);
  ::kill(holder, SIGKILL);
  int status;
  ::waitpid(holder, &status, 0);
  auto free_again = store.lock("tnk-demo", log, std::chrono::milliseconds(1000));
  EXPECT_TRUE(free_again.ok());
  ::close(ready[0]);
  ::close(ready[1]);
}

// A holder that deletes the sandbox (`sandbox delete`: its directory, lock file and all) and exits,
// while the caller waits for the lock.
pid_t holder_that_deletes(const Store& store, Log& log, const std::string& id) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  pid_t holder = ::fork();
  if (holder == 0) {
    auto lock = store.lock(id, log);
    char c = lock.ok() ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the parent waits for the lock meanwhile
    std::error_code ec;
    std::filesystem::remove_all(store.dir(id), ec);
    ::_exit(ec ? 1 : 0);
  }
  char c = 0;
  bool locked = ::read(ready[0], &c, 1) == 1 && c == 'y';
  ::close(ready[0]);
  ::close(ready[1]);
  return locked ? holder : -1;
}

// A start that waited while another command deleted the sandbox makes a new one (before, it failed with
// "cannot open lock <dir>/lock: No such file or directory", exit 66).
TEST_F(StoreTest, AStartThatWaitedWhileTheSandboxWasDeletedLocksANewOne) {
  Store store(dir_ / "sandboxes");
  std::ostringstream err;
  Log log(err);
  pid_t holder = holder_that_deletes(store, log, "tnk-demo");
  ASSERT_GT(holder, 0);
  auto lock = store.lock("tnk-demo", log, std::chrono::seconds(10));
  ASSERT_TRUE(lock.ok()) << lock.error().message;
  EXPECT_TRUE(std::filesystem::is_regular_file(store.file("tnk-demo", kLockFile)));
  int status = 0;
  ::waitpid(holder, &status, 0);
  EXPECT_EQ(status, 0);
  EXPECT_NE(err.str().find("waiting for another tnk command to finish with tnk-demo"), std::string::npos);
}

// Commands on an existing sandbox never make a deleted one's directory again: stop's bookkeeping after a
// concurrent delete used to leave sandboxes/<id>/ with only its lock file behind.
TEST_F(StoreTest, LockExistingNeverRemakesADeletedSandbox) {
  Store store(dir_ / "sandboxes");
  std::ostringstream err;
  Log log(err);
  auto none = store.lock_existing("tnk-never", log);
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_FALSE(none->has_value());
  EXPECT_TRUE(store.mark_stopped("tnk-never", log).ok());
  EXPECT_FALSE(std::filesystem::exists(store.dir("tnk-never")));

  pid_t holder = holder_that_deletes(store, log, "tnk-demo");
  ASSERT_GT(holder, 0);
  auto after = store.lock_existing("tnk-demo", log, std::chrono::seconds(10));
  ASSERT_TRUE(after.ok()) << after.error().message;
  EXPECT_FALSE(after->has_value());
  EXPECT_FALSE(std::filesystem::exists(store.dir("tnk-demo")));
  int status = 0;
  ::waitpid(holder, &status, 0);
}

// One sandbox, one supervisor: while one holds supervisor.lock (a process of its own here, as a supervisor
// is), a start sees it alive without any pid file, and a second supervisor refuses to run. A CI run under
// load found two supervisors of one sandbox (docs/reliability.md, "Concurrency").
TEST_F(StoreTest, ASecondSupervisorRefusesAndAStartSeesTheFirstWithoutAPidFile) {
  Store store(dir_ / "sandboxes");
  ASSERT_TRUE(make_dirs(store.dir("tnk-demo"), 0700).ok());
  auto alive = supervisor_alive(store, "tnk-demo");
  ASSERT_TRUE(alive.ok()) << alive.error().message;
  EXPECT_FALSE(*alive);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t first = ::fork();
  ASSERT_GE(first, 0);
  if (first == 0) {
    auto claimed = claim_supervisor(store.dir("tnk-demo"), std::chrono::seconds(1));
    char c = claimed.ok() ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    ::pause();  // a supervisor holds it until it exits
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  EXPECT_FALSE(std::filesystem::exists(store.file("tnk-demo", kSupervisorPidFile)));
  alive = supervisor_alive(store, "tnk-demo");
  ASSERT_TRUE(alive.ok()) << alive.error().message;
  EXPECT_TRUE(*alive);
  auto second = claim_supervisor(store.dir("tnk-demo"), std::chrono::milliseconds(100));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().message, "another supervisor of sandbox tnk-demo is running (it holds " +
                                        store.file("tnk-demo", kSupervisorLock).string() + ")");
  ::kill(first, SIGKILL);
  int status = 0;
  ::waitpid(first, &status, 0);
  alive = supervisor_alive(store, "tnk-demo");
  ASSERT_TRUE(alive.ok()) << alive.error().message;
  EXPECT_FALSE(*alive);
  EXPECT_TRUE(claim_supervisor(store.dir("tnk-demo"), std::chrono::milliseconds(100)).ok());
  ::close(ready[0]);
  ::close(ready[1]);
}

}  // namespace
}  // namespace tnk::state
