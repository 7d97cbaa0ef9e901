// Masks known secrets in a byte stream that arrives in pieces: each occurrence of a secret becomes as
// many '*' as it has bytes, so that lengths (Content-Length) stay right and the answer still parses.
// A secret is found as it is and in the forms JSON and URLs write it in (net/secret_match.h: JSON
// escapes, \uXXXX, percent-encoding, byte by byte). An occurrence split across two pieces is found
// too: the end of a piece that could begin one waits for the next piece or the end; a piece that ends
// otherwise passes whole, so a stream of small events is not delayed. What a server transforms in
// other ways (compresses, re-encodes) is not found. The Redactor sees bytes, not HTTP: an answer's
// chunked framing must be taken off first (net/answer_masker.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tnk::net {

class Redactor {
 public:
  explicit Redactor(std::vector<std::string> secrets);

  // The bytes of `piece` (after those held back before) that can be passed on now, masked.
  std::string feed(std::string_view piece);
  // What was held back, at the end of the stream.
  std::string finish();

 private:
  std::string pass(bool at_end);

  std::vector<std::string> secrets_;  // non-empty ones
  std::string pending_;
};

}  // namespace tnk::net
