// The pure half of the HTTP client: the response head and the chunked body decoder, fed bytes
// as they arrive so the socket loop in http_client.cc stays small and these stay testable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace tnk::inference {

inline constexpr size_t kMaxBodyBytes = 4 * 1024 * 1024;  // /v1/models is a few KiB
inline constexpr size_t kMaxHeadBytes = 64 * 1024;

struct HttpResponse {
  int status = 0;
  std::string content_type;
  std::string body;  // decoded (chunked framing removed), at most kMaxBodyBytes
};

struct ResponseHead {
  int status = 0;
  std::string content_type;                // as sent, may be empty
  std::optional<uint64_t> content_length;  // absent when not sent
  bool chunked = false;                    // Transfer-Encoding ends in "chunked"
};

// Parses "HTTP/1.x NNN reason\r\nName: value\r\n..." (without the final empty line).
// Errors name `what` (the URL) and say what was wrong.
Result<ResponseHead> parse_response_head(std::string_view head, const std::string& what);

// True when the response to a GET carries no body whatever the headers say (1xx, 204, 304).
bool status_has_no_body(int status);

// Decodes Transfer-Encoding: chunked incrementally. Trailers are read and dropped.
class ChunkedDecoder {
 public:
  // Consumes all of `data`; bytes after the final chunk are ignored. Fails on malformed framing
  // or when the decoded body would pass kMaxBodyBytes.
  Status feed(std::string_view data, const std::string& what);
  bool done() const { return state_ == State::kDone; }
  std::string& body() { return body_; }

 private:
  enum class State { kSize, kData, kDataEnd, kTrailer, kDone };
  Status end_of_line(const std::string& what);

  State state_ = State::kSize;
  std::string line_;
  uint64_t remaining_ = 0;
  std::string body_;
};

// Turns the bytes of one response, fed as they arrive, into an HttpResponse: skips 1xx heads and
// frames the body by Transfer-Encoding: chunked, Content-Length, or the end of the connection.
class ResponseReader {
 public:
  explicit ResponseReader(std::string what) : what_(std::move(what)) {}
  Status feed(std::string_view data);
  // The peer closed the connection: completes a read-until-close body or reports a truncated one.
  Status finish_at_eof();
  bool complete() const;
  HttpResponse take() { return std::move(response_); }

 private:
  Status feed_head(std::string_view data);
  Status feed_body(std::string_view data);

  std::string what_;
  std::string head_buf_;
  bool have_head_ = false;
  ResponseHead head_;
  ChunkedDecoder chunked_;
  HttpResponse response_;
};

// An error for an answer that is not valid HTTP or too big: the server was reached (EBADMSG).
Error bad_answer(const std::string& message);

}  // namespace tnk::inference
