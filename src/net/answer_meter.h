// What the inference gateway learns from an answer as it streams past, for the request's audit record:
// the status, the model the endpoint says it served, and the token counts of its `usage`. It reads a
// copy of the bytes after they were sent on: the answer itself is never held or changed, and the
// prompt and the answer's text are never kept.
//
// A stream is read where the APIs put what the record needs: its first and its last 64 KiB.
// Token counts come from the forms the common servers send: OpenAI's `usage` (prompt_tokens,
// completion_tokens; in a stream, the final chunk when the client asked for it), the Responses and
// Anthropic APIs' input_tokens/output_tokens (Anthropic's stream: message_start, then message_delta),
// and Ollama's prompt_eval_count/eval_count (the last line of its NDJSON stream).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "net/request_body.h"

namespace tnk::net {

struct TokenUsage {
  std::optional<uint64_t> prompt_tokens;
  std::optional<uint64_t> completion_tokens;
};

class AnswerMeter {
 public:
  // The answer's bytes, in order, as they were delivered to the client.
  void feed(std::string_view bytes);
  // The answer has ended: reads a whole JSON body, or the last line of a stream without a newline.
  void finish();

  int status() const { return status_; }  // 0 until a status line was seen
  const std::string& model() const { return model_; }
  const TokenUsage& usage() const { return usage_; }

 private:
  enum class Body { kNone, kLength, kChunked, kToClose };

  void feed_head(std::string_view bytes);
  void feed_content(std::string_view content);
  bool keeping_tail() const;
  void trim_tail();
  void read_line(std::string_view line);
  void read_json(std::string_view text);

  std::string head_;
  bool have_head_ = false;
  bool broken_ = false;  // framing we cannot follow: stop reading (the bytes still pass)
  Body body_ = Body::kNone;
  RequestBody framing_;
  bool lines_ = false;         // server-sent events or NDJSON: read line by line; else one JSON document
  std::string pending_;        // the current line, a stream's last lines, or the whole JSON document
  std::size_t looked_at_ = 0;  // bytes of a stream read line by line as they came
  bool tail_cut_ = false;      // pending_ holds only the end of the stream: its first line is a part
  int status_ = 0;
  std::string model_;
  TokenUsage usage_;
};

}  // namespace tnk::net
