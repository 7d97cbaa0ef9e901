#include "session/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace tnk::session {

Result<RawMode> RawMode::enter(int fd) {
  termios saved{};
  if (::tcgetattr(fd, &saved) != 0) return sys_error(errno, "cannot read the terminal's modes");
  termios raw = saved;
  raw.c_iflag |= IGNPAR;
  raw.c_iflag &= ~static_cast<tcflag_t>(ISTRIP | INLCR | IGNCR | ICRNL | IXON | IXANY | IXOFF | IUCLC);
  raw.c_lflag &= ~static_cast<tcflag_t>(ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHONL | IEXTEN);
  raw.c_oflag &= ~static_cast<tcflag_t>(OPOST);
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  int rc;
  do {
    rc = ::tcsetattr(fd, TCSADRAIN, &raw);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return sys_error(errno, "cannot put the terminal in raw mode");
  return RawMode(fd, saved);
}

RawMode::RawMode(RawMode&& other) noexcept : fd_(std::exchange(other.fd_, -1)), saved_(other.saved_) {}

void RawMode::restore() {
  if (fd_ < 0) return;
  int rc;
  do {
    rc = ::tcsetattr(fd_, TCSADRAIN, &saved_);
  } while (rc != 0 && errno == EINTR);  // other failures (a hung-up terminal) leave nothing to restore
  fd_ = -1;
}

std::optional<Resize> window_size(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0 || ws.ws_col == 0) return std::nullopt;
  return Resize{ws.ws_row, ws.ws_col};
}

}  // namespace tnk::session
