// Keeps secrets out of an HTTP/1.1 answer on its way from an upstream to the sandbox (security review
// R3-L1, R3-L2): the inference key and a route's credential, should the upstream echo them. The Redactor
// (net/redactor.h) finds a secret in a plain stream; an answer's framing is not plain: with chunked
// transfer coding a chunk-size line can fall inside the secret, and the client joins the pieces. So the
// answer is read as HTTP: each head is masked whole; the body's framing (Content-Length, chunked, or up
// to the close) is taken off, its content masked as one stream (an occurrence across chunks is found),
// and framed again: the same length (masking keeps lengths), or chunks of the masked content as it
// becomes ready (a streamed answer still streams). Trailers are dropped, chunk extensions too.
//
// Framing it cannot follow ends the answer: nothing is guessed. Not seen: content the upstream
// compresses or otherwise transforms (the gateways ask for identity encoding), and what follows a 101
// (an upgraded connection is no longer HTTP: it ends there).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "net/redactor.h"
#include "net/request_body.h"

namespace tnk::net {

inline constexpr std::size_t kMaxAnswerHeadBytes = 64 * 1024;

class AnswerMasker {
 public:
  explicit AnswerMasker(std::vector<std::string> secrets);

  // What to pass on now for the next bytes of the answer. Fails (EBADMSG) for framing that cannot be
  // followed: a head over kMaxAnswerHeadBytes or not HTTP/1.x, a Transfer-Encoding other than chunked,
  // Content-Length with Transfer-Encoding, malformed chunks. After a failure nothing more may pass.
  // Bytes after the end of the body (none, with "Connection: close") are dropped.
  Result<std::string> feed(std::string_view bytes);
  // The upstream has ended the answer: what was held back (a cut answer stays cut).
  std::string finish();

 private:
  enum class Part { kHead, kBody, kDone };
  enum class Body { kLength, kChunked, kToClose };

  Result<std::string> take_head(std::string_view bytes);
  Status start_body(std::string_view head);
  Result<std::string> take_body(std::string_view bytes);
  std::string framed(std::string content) const;

  std::vector<std::string> secrets_;
  Part part_ = Part::kHead;
  Body body_ = Body::kToClose;
  std::string head_;
  RequestBody framing_;
  Redactor content_;
};

// A whole answer, masked (for the few answers a gateway reads whole before passing them on).
Result<std::string> mask_whole_answer(std::string_view answer, std::vector<std::string> secrets);

}  // namespace tnk::net
