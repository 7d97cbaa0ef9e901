// The inference gateway's concurrency limit: at most N requests of a sandbox at the endpoint at a time,
// so that one sandbox cannot hold every slot of an endpoint that all projects share. Up to N more wait
// their turn; beyond that, or after waiting too long, a request is answered 429 at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace tnk::net {

class RequestSlots {
 public:
  explicit RequestSlots(std::size_t concurrency) : limit_(concurrency == 0 ? 1 : concurrency) {}

  enum class Outcome { kGranted, kQueueFull, kTimedOut, kStopped };

  // Takes a slot, waiting at most `wait` (and watching `stop_fd`, -1: none) while all are taken.
  Outcome acquire(std::chrono::milliseconds wait, int stop_fd);
  void release();

  std::size_t limit() const { return limit_; }

 private:
  const std::size_t limit_;
  std::mutex mu_;
  std::condition_variable freed_;
  std::size_t running_ = 0;
  std::size_t waiting_ = 0;
};

// A granted slot, given back when it goes out of scope.
class SlotHold {
 public:
  explicit SlotHold(RequestSlots& slots) : slots_(slots) {}
  ~SlotHold() { slots_.release(); }
  SlotHold(const SlotHold&) = delete;
  SlotHold& operator=(const SlotHold&) = delete;

 private:
  RequestSlots& slots_;
};

}  // namespace tnk::net
