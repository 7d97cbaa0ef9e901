#include "net/answer_meter.h"

#include <algorithm>
#include <charconv>

#include <nlohmann/json.hpp>

#include "net/http_request.h"

namespace tnk::net {
namespace {

constexpr std::size_t kMaxHeadBytes = 64 * 1024;
constexpr std::size_t kWindowBytes = 64 * 1024;             // a stream's start and end, read for its counts
constexpr std::size_t kMaxDocumentBytes = 8 * 1024 * 1024;  // a whole JSON answer

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

std::optional<uint64_t> count_at(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<uint64_t>();
}

// The first of `names` that `object` holds as a count: later events of a stream overwrite earlier ones
// (Anthropic's message_delta carries the final output_tokens).
void take_count(const nlohmann::json& object, std::initializer_list<const char*> names, std::optional<uint64_t>& into) {
  for (const char* name : names) {
    if (auto value = count_at(object, name)) {
      into = value;
      return;
    }
  }
}

void take_usage(const nlohmann::json& object, TokenUsage& usage) {
  take_count(object, {"prompt_tokens", "input_tokens"}, usage.prompt_tokens);
  take_count(object, {"completion_tokens", "output_tokens"}, usage.completion_tokens);
}

// The event itself, or the object a Responses (`response`) or Anthropic (`message`) event wraps.
const nlohmann::json* inner(const nlohmann::json& event, const char* key) {
  auto it = event.find(key);
  return it != event.end() && it->is_object() ? &*it : nullptr;
}

}  // namespace

void AnswerMeter::feed(std::string_view bytes) {
  if (broken_) return;
  if (!have_head_) return feed_head(bytes);
  if (body_ == Body::kToClose) return feed_content(bytes);
  if (keeping_tail()) {  // the framing's content goes straight to the tail: one copy, not two
    if (!framing_.take(bytes, &pending_).ok()) broken_ = true;
    return trim_tail();
  }
  std::string content;
  auto taken = framing_.take(bytes, &content);
  if (!taken.ok()) {
    broken_ = true;
    return;
  }
  feed_content(content);
}

// Gathers the head; a 1xx head is skipped (the real answer follows it).
void AnswerMeter::feed_head(std::string_view bytes) {
  head_.append(bytes);
  std::size_t end = head_.find("\r\n\r\n");
  if (end == std::string::npos) {
    if (head_.size() > kMaxHeadBytes) broken_ = true;
    return;
  }
  std::string rest = head_.substr(end + 4);
  std::string_view head = std::string_view(head_).substr(0, end);
  std::string_view status_line = head.substr(0, head.find("\r\n"));
  int status = 0;
  if (status_line.size() < 12 || !status_line.starts_with("HTTP/1.") ||
      std::from_chars(status_line.data() + 9, status_line.data() + 12, status).ec != std::errc()) {
    broken_ = true;
    return;
  }
  if (status >= 100 && status < 200) {
    head_.clear();
    return feed_head(rest);
  }
  status_ = status;
  std::string content_type;
  std::optional<uint64_t> length;
  bool chunked = false;
  for (std::size_t at = status_line.size() + 2; at < head.size();) {
    std::size_t eol = head.find("\r\n", at);
    std::string_view line = head.substr(at, eol == std::string_view::npos ? std::string_view::npos : eol - at);
    at = eol == std::string_view::npos ? head.size() : eol + 2;
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string name = ascii_lower(line.substr(0, colon));
    std::string_view value = trim(line.substr(colon + 1));
    if (name == "content-type") content_type = ascii_lower(value);
    if (name == "transfer-encoding") chunked = ascii_lower(value).ends_with("chunked");
    if (name == "content-length") {
      uint64_t n = 0;
      if (std::from_chars(value.data(), value.data() + value.size(), n).ec == std::errc()) length = n;
    }
  }
  have_head_ = true;
  head_.clear();
  lines_ = content_type.find("event-stream") != std::string::npos || content_type.find("ndjson") != std::string::npos;
  if (chunked) {
    body_ = Body::kChunked;
    framing_ = RequestBody::chunked();
  } else if (length) {
    body_ = Body::kLength;
    RequestHead framed;
    framed.headers.emplace_back("Content-Length", std::to_string(*length));
    auto body = RequestBody::of(framed);
    if (body.ok()) framing_ = std::move(*body);
  } else {
    body_ = Body::kToClose;
  }
  if (!rest.empty()) feed(rest);
}

// A stream is read line by line in its first kWindowBytes, where every API names the model (and
// Anthropic's message_start has the prompt's count); after them only its last kWindowBytes are kept, and
// read when it ends, where every API puts the final counts (OpenAI's usage chunk, Anthropic's
// message_delta, Responses' response.completed, Ollama's last line). A 64 MiB stream costs a copy of
// its bytes, not a look at each of its half a million lines.
void AnswerMeter::feed_content(std::string_view content) {
  if (!lines_) {
    if (pending_.size() + content.size() > kMaxDocumentBytes) {
      broken_ = true;  // too big to read for its counts; it still passes whole
      return;
    }
    pending_.append(content);
    return;
  }
  while (looked_at_ < kWindowBytes && !content.empty()) {
    std::size_t newline = content.find('\n');
    std::string_view part = content.substr(0, newline);
    looked_at_ += part.size() + 1;
    if (newline == std::string_view::npos) break;  // the line goes on in the next piece
    if (pending_.empty()) {
      read_line(part);  // a whole line in this piece: read in place, not copied
    } else {
      pending_.append(part);
      read_line(pending_);
      pending_.clear();
    }
    content.remove_prefix(newline + 1);
  }
  pending_.append(content);
  trim_tail();
}

bool AnswerMeter::keeping_tail() const { return lines_ && looked_at_ >= kWindowBytes; }

// The tail may grow to several windows before it is cut back, so that its bytes are moved rarely.
void AnswerMeter::trim_tail() {
  if (pending_.size() <= 8 * kWindowBytes) return;
  pending_.erase(0, pending_.size() - kWindowBytes);
  tail_cut_ = true;
}

// One line of a stream: "data: {...}" (server-sent events) or "{...}" (NDJSON). Only lines that can
// carry what the record needs are parsed.
void AnswerMeter::read_line(std::string_view line) {
  line = trim(line);
  if (line.starts_with("data:")) line = trim(line.substr(5));
  if (!line.starts_with('{')) return;
  bool wanted = (model_.empty() && line.find("\"model\"") != std::string_view::npos) ||
                line.find("usage\"") != std::string_view::npos || line.find("eval_count\"") != std::string_view::npos;
  if (wanted) read_json(line);
}

void AnswerMeter::read_json(std::string_view text) {
  auto event = nlohmann::json::parse(text, nullptr, false);
  if (!event.is_object()) return;
  const nlohmann::json* objects[] = {&event, inner(event, "response"), inner(event, "message")};
  for (const nlohmann::json* object : objects) {
    if (object == nullptr) continue;
    auto model = object->find("model");
    if (model_.empty() && model != object->end() && model->is_string()) model_ = model->get<std::string>();
    if (const nlohmann::json* usage = inner(*object, "usage")) take_usage(*usage, usage_);
  }
  take_count(event, {"prompt_eval_count"}, usage_.prompt_tokens);  // Ollama
  take_count(event, {"eval_count"}, usage_.completion_tokens);
}

void AnswerMeter::finish() {
  if (broken_ || pending_.empty()) return;
  if (lines_) {
    std::string_view tail = pending_;
    if (tail_cut_) tail.remove_prefix(std::min(tail.size(), tail.find('\n') + 1));  // a cut line is not read
    while (!tail.empty()) {
      std::size_t newline = tail.find('\n');
      read_line(tail.substr(0, newline));
      tail.remove_prefix(newline == std::string_view::npos ? tail.size() : newline + 1);
    }
  } else {
    read_json(pending_);
  }
  pending_.clear();
}

}  // namespace tnk::net
