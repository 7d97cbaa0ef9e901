#include "agent/frame_queue.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace tnk::agent {

Status FrameQueue::push(FrameType type, uint32_t session, std::string_view payload) {
  return append_frame(out_, type, session, payload);
}

bool FrameQueue::flush(int fd) {
  while (queued() > 0) {
    ssize_t n = ::send(fd, out_.data() + sent_, queued(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == ENOTSOCK) n = ::write(fd, out_.data() + sent_, queued());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN;
    sent_ += static_cast<std::size_t>(n);
  }
  out_.clear();
  sent_ = 0;
  return true;
}

}  // namespace tnk::agent
