#include "core/stopwatch.h"

namespace tnk {

std::chrono::seconds Stopwatch::elapsed() const {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start_);
}

std::string Stopwatch::format_elapsed(std::chrono::seconds elapsed) {
  const long long total = elapsed.count() < 0 ? 0 : elapsed.count();
  auto two = [](long long n) { return (n < 10 ? "0" : "") + std::to_string(n); };
  if (total >= 3600) return std::to_string(total / 3600) + ":" + two(total / 60 % 60) + ":" + two(total % 60);
  return std::to_string(total / 60) + ":" + two(total % 60);
}

std::string progress_line(int step, int steps, const std::string& what, const Stopwatch& since) {
  return "[" + std::to_string(step) + "/" + std::to_string(steps) + "] " + what + ", " + since.text();
}

}  // namespace tnk
