// Where a request's body ends in the client's byte stream, from its head's framing (Content-Length or
// chunked), so that a relay passes exactly one request and never what follows it (a pipelined request
// that nobody checked). Framing that two peers could read differently is refused, never guessed.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/result.h"
#include "net/http_request.h"

namespace tnk::net {

inline constexpr std::size_t kMaxChunkLineBytes = 4096;  // a chunk-size line or a trailer line

class RequestBody {
 public:
  // The body `head` announces. Fails (EBADMSG) for a Transfer-Encoding other than "chunked", for
  // Content-Length together with Transfer-Encoding, for several or non-numeric Content-Length values.
  static Result<RequestBody> of(const RequestHead& head);

  // A chunked body, as an answer announces it (the same framing as a request's).
  static RequestBody chunked();

  // Takes the next bytes of the client's stream (those after the head, in order) and returns how many of
  // them belong to the body: fewer than `data.size()` once the body has ended. Fails for malformed
  // chunked framing. `content`, when given, gets the body's own bytes appended (chunk framing removed).
  Result<std::size_t> take(std::string_view data, std::string* content = nullptr);

  bool complete() const { return state_ == State::kDone; }

 private:
  enum class State { kLength, kChunkSize, kChunkData, kChunkDataEnd, kTrailer, kDone };

  Result<std::size_t> take_chunked(std::string_view data, std::string* content);
  Status end_of_line();

  State state_ = State::kDone;
  uint64_t left_ = 0;  // bytes of the body (kLength) or of the current chunk (kChunkData)
  std::string line_;   // the chunk-size or trailer line read so far, without its CRLF
};

// What goes upstream first for one request: `head` in origin form ("Connection: close") and the part
// of `after_head` (the client's bytes that followed the head) that `body` takes; what follows the body
// stays behind. Fails as RequestBody::take does.
Result<std::string> first_request_bytes(const RequestHead& head, std::string_view after_head, RequestBody& body);

}  // namespace tnk::net
