// Masks known secrets in a byte stream that arrives in pieces: each occurrence of a secret becomes as
// many '*', so that lengths (Content-Length, chunk sizes) stay right and the answer still parses. An
// occurrence split across two pieces is found too: the last (longest secret - 1) bytes of a piece wait
// for the next piece or the end. What a server transforms (compresses, escapes, encodes) is not found.
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
  std::vector<std::string> secrets_;  // non-empty ones
  std::size_t hold_ = 0;              // longest secret - 1
  std::string pending_;
};

}  // namespace tnk::net
