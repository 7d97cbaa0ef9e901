// Values remembered with the identity of the files they come from (core/file_memo.h).
#include "core/file_memo.h"

#include <gtest/gtest.h>

#include "core/files.h"
#include "temp_dir.h"

namespace tnk {
namespace {

class FileMemoTest : public ::testing::Test {
 protected:
  // memoized() over `input` with a compute that counts its calls and returns "value-<n>".
  Result<std::string> ask(const std::vector<std::filesystem::path>& inputs) {
    return memoized(dir_.path() / "memo" / "value.json", inputs,
                    [this]() -> Result<std::string> { return "value-" + std::to_string(++computed_); });
  }

  testing_support::TempDir dir_;
  std::filesystem::path input_ = dir_.path() / "input";
  int computed_ = 0;
};

TEST_F(FileMemoTest, ComputesOnceWhileTheInputStaysTheSame) {
  ASSERT_TRUE(write_file_atomic(input_, "one").ok());
  EXPECT_EQ(*ask({input_}), "value-1");
  EXPECT_EQ(*ask({input_}), "value-1");
  EXPECT_EQ(computed_, 1);
}

TEST_F(FileMemoTest, ComputesAgainWhenTheInputChanges) {
  ASSERT_TRUE(write_file_atomic(input_, "one").ok());
  EXPECT_EQ(*ask({input_}), "value-1");
  ASSERT_TRUE(write_file_atomic(input_, "two").ok());  // a new inode, as an install would make
  EXPECT_EQ(*ask({input_}), "value-2");
  ASSERT_TRUE(write_kernel_file(input_, "six").ok());  // rewritten in place, same size
  std::filesystem::permissions(input_, std::filesystem::perms::owner_exec, std::filesystem::perm_options::add);
  EXPECT_EQ(*ask({input_}), "value-3");
  EXPECT_EQ(*ask({input_}), "value-3");
}

TEST_F(FileMemoTest, AMissingInputOrAFailureIsNeverRemembered) {
  EXPECT_EQ(*ask({dir_.path() / "absent"}), "value-1");
  EXPECT_EQ(*ask({dir_.path() / "absent"}), "value-2");
  EXPECT_EQ(*ask({""}), "value-3");  // a program not found on PATH
  ASSERT_TRUE(write_file_atomic(input_, "one").ok());
  auto failing = memoized(dir_.path() / "memo" / "value.json", {input_},
                          []() -> Result<std::string> { return not_found("no such tool"); });
  EXPECT_FALSE(failing.ok());
  EXPECT_EQ(*ask({input_}), "value-4");
}

}  // namespace
}  // namespace tnk
