#include "net/head_reader.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "net/proxy_session.h"
#include "net/socket_io.h"

namespace tnk::net {

HeadOutcome read_request_head(int fd, std::string& buffered, RequestForm form, std::chrono::milliseconds timeout,
                              int stop_fd) {
  auto deadline = Clock::now() + timeout;
  char chunk[8192];
  for (;;) {
    auto parsed = parse_request_head(buffered, form);
    if (!parsed.ok()) return {std::nullopt, http_status_for(parsed.error()), parsed.error().message};
    if (parsed->has_value()) return {std::move(**parsed), 0, ""};
    Ready r = wait_ready(fd, POLLIN, deadline, stop_fd);
    if (r == Ready::kTimeout && !buffered.empty()) {
      return {std::nullopt, 408, "no complete request head within " + duration_text(timeout)};
    }
    if (r != Ready::kYes) return {};
    ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return {};  // the client left before asking anything
    buffered.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace tnk::net
