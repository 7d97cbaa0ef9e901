// Keeps a flood of per-decision lines (a sandbox looping on refused requests) from growing
// supervisor.log at the sandbox's pace: at most a fixed number of lines a second get through; the rest
// are counted, and the count goes out as one "N similar lines suppressed" note with the next line that
// passes. The audit log, not supervisor.log, is the record of every decision and is never limited.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace tnk::supervisor {

inline constexpr std::size_t kDecisionLinesPerSecond = 10;

class LineRate {
 public:
  using Clock = std::chrono::steady_clock;

  explicit LineRate(std::size_t per_second = kDecisionLinesPerSecond) : per_second_(per_second) {}

  // Whether a line may be written at `now`. When it may and lines were held back since the last one,
  // `note` receives "<N> similar lines suppressed" (to write before it); otherwise it is left empty.
  bool admit(Clock::time_point now, std::string& note);

 private:
  std::size_t per_second_;
  Clock::time_point window_start_{};
  std::size_t in_window_ = 0;
  std::size_t suppressed_ = 0;
};

}  // namespace tnk::supervisor
