#include "supervisor/line_rate.h"

namespace tnk::supervisor {

bool LineRate::admit(Clock::time_point now, std::string& note) {
  note.clear();
  if (now - window_start_ >= std::chrono::seconds(1)) {
    window_start_ = now;
    in_window_ = 0;
  }
  if (in_window_ >= per_second_) {
    ++suppressed_;
    return false;
  }
  ++in_window_;
  if (suppressed_ > 0) {
    note = std::to_string(suppressed_) + (suppressed_ == 1 ? " similar line" : " similar lines") + " suppressed";
    suppressed_ = 0;
  }
  return true;
}

}  // namespace tnk::supervisor
