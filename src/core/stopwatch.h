// How long something slow has taken so far, as progress lines show it ("0:42", "12:05").
#pragma once

#include <chrono>
#include <string>

namespace tnk {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  std::chrono::seconds elapsed() const;
  std::string text() const { return format_elapsed(elapsed()); }  // "m:ss", "h:mm:ss" from an hour on

  static std::string format_elapsed(std::chrono::seconds elapsed);

 private:
  std::chrono::steady_clock::time_point start_;
};

// "[2/7] downloading packages, 0:42": a step of a known count, with the time since the start.
std::string progress_line(int step, int steps, const std::string& what, const Stopwatch& since);

}  // namespace tnk
