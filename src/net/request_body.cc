#include "net/request_body.h"

#include <cerrno>
#include <charconv>
#include <string>

namespace tnk::net {
namespace {

Error bad(const std::string& what) { return bad_request("body: " + what); }

Result<uint64_t> parse_number(std::string_view text, int base, const char* what) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return bad(std::string("invalid ") + what + " \"" + std::string(text.substr(0, 40)) + "\"");
  }
  return value;
}

}  // namespace

Result<RequestBody> RequestBody::of(const RequestHead& head) {
  const std::string* length = nullptr;
  const std::string* coding = nullptr;
  for (const auto& [name, value] : head.headers) {
    std::string key = ascii_lower(name);
    const std::string** slot = key == "content-length" ? &length : key == "transfer-encoding" ? &coding : nullptr;
    if (slot == nullptr) continue;
    if (*slot != nullptr) return bad("more than one " + name + " header");
    *slot = &value;
  }
  RequestBody body;
  if (length != nullptr && coding != nullptr) return bad("both Content-Length and Transfer-Encoding");
  if (coding != nullptr) {
    if (ascii_lower(*coding) != "chunked")
      return bad("Transfer-Encoding \"" + *coding + "\" (only chunked is relayed)");
    body.state_ = State::kChunkSize;
  } else if (length != nullptr) {
    TNK_ASSIGN_OR_RETURN(body.left_, parse_number(*length, 10, "Content-Length"));
    body.state_ = body.left_ > 0 ? State::kLength : State::kDone;
  }
  return body;
}

RequestBody RequestBody::chunked() {
  RequestBody body;
  body.state_ = State::kChunkSize;
  return body;
}

Result<std::size_t> RequestBody::take(std::string_view data, std::string* content) {
  if (state_ == State::kDone) return std::size_t{0};
  if (state_ != State::kLength) return take_chunked(data, content);
  std::size_t taken = left_ < data.size() ? static_cast<std::size_t>(left_) : data.size();
  if (content != nullptr) content->append(data.substr(0, taken));
  left_ -= taken;
  if (left_ == 0) state_ = State::kDone;
  return taken;
}

// chunked-body = *chunk last-chunk trailer-section CRLF (RFC 9112 7.1); extensions are passed, not read.
Result<std::size_t> RequestBody::take_chunked(std::string_view data, std::string* content) {
  std::size_t i = 0;
  while (i < data.size() && state_ != State::kDone) {
    if (state_ == State::kChunkData) {
      std::size_t n = left_ < data.size() - i ? static_cast<std::size_t>(left_) : data.size() - i;
      if (content != nullptr) content->append(data.substr(i, n));
      left_ -= n;
      i += n;
      if (left_ == 0) state_ = State::kChunkDataEnd;
      continue;
    }
    char c = data[i++];
    if (c != '\n') {
      if (line_.size() >= kMaxChunkLineBytes) return bad("a chunk line longer than 4 KiB");
      line_ += c;
      continue;
    }
    if (line_.empty() || line_.back() != '\r') return bad("a chunk line ends in LF without CR");
    line_.pop_back();
    TNK_RETURN_IF_ERROR(end_of_line());
    line_.clear();
  }
  return i;
}

Status RequestBody::end_of_line() {
  switch (state_) {
    case State::kChunkSize: {
      std::string_view size = std::string_view(line_).substr(0, line_.find(';'));
      while (!size.empty() && (size.back() == ' ' || size.back() == '\t')) size.remove_suffix(1);
      TNK_ASSIGN_OR_RETURN(left_, parse_number(size, 16, "chunk size"));
      state_ = left_ > 0 ? State::kChunkData : State::kTrailer;
      return ok_status();
    }
    case State::kChunkDataEnd:
      if (!line_.empty()) return bad("chunk data longer than its size");
      state_ = State::kChunkSize;
      return ok_status();
    case State::kTrailer:
      if (line_.empty()) state_ = State::kDone;
      return ok_status();
    default: return ok_status();
  }
}

Result<std::string> first_request_bytes(const RequestHead& head, std::string_view after_head, RequestBody& body) {
  TNK_ASSIGN_OR_RETURN(std::size_t taken, body.take(after_head));
  return origin_form_head(head) + std::string(after_head.substr(0, taken));
}

}  // namespace tnk::net
