#include "net/head_reader.h"

#include "net/proxy_session.h"
#include "net/socket_io.h"

namespace tnk::net {

HeadOutcome read_request_head(int fd, std::string& buffered, RequestForm form, std::chrono::milliseconds timeout,
                              int stop_fd) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    auto parsed = parse_request_head(buffered, form);
    if (!parsed.ok()) return {std::nullopt, http_status_for(parsed.error()), parsed.error().message};
    if (parsed->has_value()) return {std::move(**parsed), 0, ""};
    Received got = receive_more(fd, buffered, 8192, deadline, stop_fd);
    if (got == Received::kTimeout) {
      std::string what = buffered.empty() ? "no request head" : "no complete request head";
      return {std::nullopt, 408, what + " within " + duration_text(timeout)};
    }
    if (got != Received::kMore && got != Received::kNothingYet) return {};  // the client left, or tnk stops
  }
}

}  // namespace tnk::net
