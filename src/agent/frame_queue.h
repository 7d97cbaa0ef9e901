// Frames waiting to go out on a non-blocking fd, written as the fd takes them: the one output queue of
// both ends of the agent protocol (the host's pump and tnk-agent's server). It is bounded the way both
// need: a frame is always queued (acks, exits and errors must never be lost), but past the bound
// has_room() is false and the owner stops reading what would queue more (stdin on the host, program
// output in the guest), so the queue exceeds its bound by at most what one read adds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/frame.h"

namespace tnk::agent {

class FrameQueue {
 public:
  explicit FrameQueue(std::size_t bound) : bound_(bound) {}

  // Appends one frame. The caller keeps `payload` within kMaxPayload (an oversize one is an error and
  // queues nothing).
  Status push(FrameType type, uint32_t session, std::string_view payload = {});
  // Bytes queued and not yet written.
  std::size_t queued() const { return out_.size() - sent_; }
  // False once the queue holds `bound` bytes or more: refuse new input until it drains.
  bool has_room() const { return queued() < bound_; }
  // Writes what `fd` takes now without blocking (send(2), or write(2) on a non-socket such as a
  // virtio-serial port). False when the fd is broken (errno says why).
  bool flush(int fd);

 private:
  std::size_t bound_;
  std::string out_;
  std::size_t sent_ = 0;
};

}  // namespace tnk::agent
