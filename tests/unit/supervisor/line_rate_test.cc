#include "supervisor/line_rate.h"

#include <gtest/gtest.h>

#include <string>

namespace tnk::supervisor {
namespace {

using namespace std::chrono_literals;

// A flood: the first lines of each second pass, the rest are counted, and the count is written once.
TEST(LineRate, HoldsBackAFloodAndCountsIt) {
  LineRate rate(3);
  LineRate::Clock::time_point t0{10s};
  std::string note;
  int passed = 0;
  for (int i = 0; i < 100; ++i) passed += rate.admit(t0 + std::chrono::milliseconds(i), note) ? 1 : 0;
  EXPECT_EQ(passed, 3);
  EXPECT_TRUE(rate.admit(t0 + 1s, note));
  EXPECT_EQ(note, "97 similar lines suppressed");
  EXPECT_TRUE(rate.admit(t0 + 1s, note));
  EXPECT_EQ(note, "");
}

// The pair: a steady trickle below the rate is never held back and carries no note.
TEST(LineRate, LetsASteadyTrickleThrough) {
  LineRate rate(3);
  LineRate::Clock::time_point t0{10s};
  std::string note;
  for (int i = 0; i < 50; ++i) {
    EXPECT_TRUE(rate.admit(t0 + std::chrono::milliseconds(400 * i), note)) << i;
    EXPECT_EQ(note, "") << i;
  }
  EXPECT_TRUE(rate.admit(t0 + 30s, note));
  EXPECT_TRUE(rate.admit(t0 + 30s, note));
  EXPECT_TRUE(rate.admit(t0 + 30s, note));
  EXPECT_FALSE(rate.admit(t0 + 30s, note));
  EXPECT_TRUE(rate.admit(t0 + 31s, note));
  EXPECT_EQ(note, "1 similar line suppressed");
}

}  // namespace
}  // namespace tnk::supervisor
