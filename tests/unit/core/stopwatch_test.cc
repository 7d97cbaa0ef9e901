#include "core/stopwatch.h"

#include <gtest/gtest.h>

namespace tnk {
namespace {

using std::chrono::seconds;

TEST(Stopwatch, ElapsedReadsAsMinutesAndSecondsThenHours) {
  EXPECT_EQ(Stopwatch::format_elapsed(seconds(0)), "0:00");
  EXPECT_EQ(Stopwatch::format_elapsed(seconds(42)), "0:42");
  EXPECT_EQ(Stopwatch::format_elapsed(seconds(605)), "10:05");
  EXPECT_EQ(Stopwatch::format_elapsed(seconds(3600 + 61)), "1:01:01");
  EXPECT_EQ(Stopwatch::format_elapsed(seconds(-3)), "0:00");
}

TEST(Stopwatch, AProgressLineSaysTheStepOfHowManyAndTheTimeSoFar) {
  Stopwatch now;
  EXPECT_EQ(progress_line(2, 7, "downloading packages", now), "[2/7] downloading packages, 0:00");
}

}  // namespace
}  // namespace tnk
