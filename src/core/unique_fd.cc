#include "core/unique_fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace tnk {

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Result<Pipe> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return sys_error(errno, "cannot create a pipe");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

}  // namespace tnk
