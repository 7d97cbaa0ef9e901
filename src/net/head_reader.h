// Reading one HTTP request head from a client, for the egress proxy and the inference forwarder alike:
// bytes are gathered until the head parses, is refused, or the client is too slow.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "net/http_request.h"

namespace tnk::net {

struct HeadOutcome {
  std::optional<RequestHead> head;  // the complete head
  int status = 0;                   // no head: answer this (400, 431, 408) with `reason`; 0: just close
  std::string reason;               // for the answer and the net_deny record
};

// Reads from `fd` into `buffered` (which keeps what follows the head) until the head is complete or
// refused. A client that sent part of a head and then nothing for `timeout` gets 408; one that sent
// nothing, left, or tnk stopping (`stop_fd` readable) ends it without an answer.
HeadOutcome read_request_head(int fd, std::string& buffered, RequestForm form, std::chrono::milliseconds timeout,
                              int stop_fd);

}  // namespace tnk::net
