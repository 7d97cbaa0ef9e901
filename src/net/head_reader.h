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
// refused. A client whose head is not complete within `timeout` gets 408, also one that sent nothing
// yet: it held a connection slot for the whole timeout, so it is answered and recorded like a slow
// head (on vm, QEMU's forwarder connects before the guest's bytes arrive, so an emulated guest's late
// request looks like that; docs/reliability.md, "Load and soak"). A client that left, or tnk stopping
// (`stop_fd` readable), ends it without an answer.
HeadOutcome read_request_head(int fd, std::string& buffered, RequestForm form, std::chrono::milliseconds timeout,
                              int stop_fd);

}  // namespace tnk::net
