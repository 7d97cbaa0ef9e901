#include "net/request_slots.h"

#include <poll.h>

namespace tnk::net {
namespace {

constexpr std::chrono::milliseconds kStopCheck{100};  // how often a waiting request looks at the stop fd

bool stopping(int stop_fd) {
  if (stop_fd < 0) return false;
  pollfd p{stop_fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

}  // namespace

RequestSlots::Outcome RequestSlots::acquire(std::chrono::milliseconds wait, int stop_fd) {
  std::unique_lock lock(mu_);
  if (running_ < limit_) {
    ++running_;
    return Outcome::kGranted;
  }
  if (waiting_ >= limit_) return Outcome::kQueueFull;
  ++waiting_;
  auto deadline = std::chrono::steady_clock::now() + wait;
  Outcome outcome = Outcome::kTimedOut;
  while (std::chrono::steady_clock::now() < deadline) {
    if (running_ < limit_) {
      ++running_;
      outcome = Outcome::kGranted;
      break;
    }
    if (stopping(stop_fd)) {
      outcome = Outcome::kStopped;
      break;
    }
    freed_.wait_for(
        lock, std::min<std::chrono::steady_clock::duration>(kStopCheck, deadline - std::chrono::steady_clock::now()));
  }
  --waiting_;
  return outcome;
}

void RequestSlots::release() {
  {
    std::lock_guard lock(mu_);
    --running_;
  }
  freed_.notify_one();
}

}  // namespace tnk::net
