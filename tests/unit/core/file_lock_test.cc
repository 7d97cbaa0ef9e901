// The one flock helper: waiting with a deadline and a hint, trying without waiting, the held fd, and
// a lock file unlinked by its holder while another waits.
#include "core/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "temp_dir.h"

namespace tnk {
namespace {

namespace fs = std::filesystem;

class FileLockTest : public ::testing::Test {
 protected:
  testing_support::TempDir tmp_{"tnk-file-lock"};
  const fs::path& dir_ = tmp_.path();
};

TEST_F(FileLockTest, ASecondAcquireTimesOutWithItsHintAndTellsOnce) {
  auto held = FileLock::acquire(dir_ / "x.lock", std::chrono::seconds(1));
  ASSERT_TRUE(held.ok());
  int told = 0;
  auto second = FileLock::acquire(
      dir_ / "x.lock", std::chrono::milliseconds(100), [&] { ++told; }, "wait for it");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().message, "timed out waiting for lock " + (dir_ / "x.lock").string());
  EXPECT_EQ(second.error().hint, "wait for it");
  EXPECT_EQ(told, 1);
}

TEST_F(FileLockTest, TryAcquireNeverWaits) {
  auto first = FileLock::try_acquire(dir_ / "x.lock");
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(first->has_value());
  auto second = FileLock::try_acquire(dir_ / "x.lock");
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->has_value());
  first->reset();
  auto third = FileLock::try_acquire(dir_ / "x.lock");
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->has_value());
}

TEST_F(FileLockTest, TheFdHoldsTheLockAndClosesOnExec) {
  auto held = FileLock::acquire(dir_ / "x.lock", std::chrono::seconds(1));
  ASSERT_TRUE(held.ok());
  EXPECT_NE(::fcntl(held->fd(), F_GETFD) & FD_CLOEXEC, 0);
  int other = ::open((dir_ / "x.lock").c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(other, 0);
  EXPECT_NE(::flock(other, LOCK_EX | LOCK_NB), 0);
  ::close(other);
}

TEST_F(FileLockTest, AWaiterWhoseFileTheHolderUnlinkedLocksTheNewFile) {
  auto held = FileLock::acquire(dir_ / "x.lock", std::chrono::seconds(1));
  ASSERT_TRUE(held.ok());
  std::optional<Result<FileLock>> waited;
  std::thread waiter([&] { waited = FileLock::acquire(dir_ / "x.lock", std::chrono::seconds(5)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the waiter has opened the old file
  fs::remove(dir_ / "x.lock");  // what a holder does when it deletes what the lock guarded
  { FileLock released = std::move(*held); }
  waiter.join();
  ASSERT_TRUE(waited && waited->ok());
  struct stat locked {
  }, now{};
  ASSERT_EQ(::fstat((*waited)->fd(), &locked), 0);
  ASSERT_EQ(::stat((dir_ / "x.lock").c_str(), &now), 0) << "the waiter made a new lock file";
  EXPECT_EQ(locked.st_ino, now.st_ino);
}

}  // namespace
}  // namespace tnk
