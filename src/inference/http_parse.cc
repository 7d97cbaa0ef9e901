#include "inference/http_parse.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <utility>

namespace tnk::inference {
namespace {

constexpr size_t kMaxLineBytes = 8 * 1024;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Result<int> parse_status_line(std::string_view line, const std::string& what) {
  // "HTTP/1.1 200 OK"; the reason phrase may be empty or missing.
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || line[8] != ' ' || !all_digits(line.substr(9, 3)) ||
      (line.size() > 12 && line[12] != ' ')) {
    return bad_answer(what + " did not answer with HTTP/1.x (first line: '" + std::string(line.substr(0, 60)) + "')");
  }
  return std::stoi(std::string(line.substr(9, 3)));
}

Status apply_header(std::string_view name, std::string_view value, ResponseHead& head, const std::string& what) {
  if (iequals(name, "content-type")) {
    head.content_type = std::string(value);
  } else if (iequals(name, "content-length")) {
    if (!all_digits(value) || value.size() > 18) {
      return bad_answer(what + " sent an invalid Content-Length '" + std::string(value) + "'");
    }
    uint64_t length = std::stoull(std::string(value));
    if (head.content_length && *head.content_length != length) {
      return bad_answer(what + " sent two different Content-Length headers");
    }
    head.content_length = length;
  } else if (iequals(name, "transfer-encoding")) {
    // The last coding decides the framing (RFC 9112 6.3); anything else is read until close.
    auto comma = value.rfind(',');
    std::string_view last = trim(comma == std::string_view::npos ? value : value.substr(comma + 1));
    head.chunked = iequals(last, "chunked");
  }
  return ok_status();
}

Error too_big(const std::string& what) {
  Error e = bad_answer(what + " sent a body larger than 4 MiB");
  e.sys_errno = EFBIG;
  return e;
}

// The end of the head ("\r\n\r\n", or "\n\n" from sloppy servers): {head length, bytes to skip}.
std::optional<std::pair<size_t, size_t>> find_head_end(std::string_view buf) {
  size_t crlf = buf.find("\r\n\r\n");
  size_t lf = buf.find("\n\n");
  if (crlf == std::string_view::npos && lf == std::string_view::npos) return std::nullopt;
  if (lf < crlf) return std::make_pair(lf, lf + 2);
  return std::make_pair(crlf, crlf + 4);
}

}  // namespace

Error bad_answer(const std::string& message) {
  Error e = failed(message, "check that the inference URL points at an OpenAI-compatible server");
  e.sys_errno = EBADMSG;
  return e;
}

bool status_has_no_body(int status) { return (status >= 100 && status < 200) || status == 204 || status == 304; }

Result<ResponseHead> parse_response_head(std::string_view head_text, const std::string& what) {
  ResponseHead head;
  size_t pos = 0;
  bool first = true;
  while (pos <= head_text.size()) {
    size_t end = head_text.find('\n', pos);
    if (end == std::string_view::npos) end = head_text.size();
    std::string_view line = trim(head_text.substr(pos, end - pos));
    pos = end + 1;
    if (first) {
      TNK_ASSIGN_OR_RETURN(head.status, parse_status_line(line, what));
      first = false;
      continue;
    }
    if (line.empty()) continue;
    auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return bad_answer(what + " sent a malformed header line '" + std::string(line.substr(0, 60)) + "'");
    }
    TNK_RETURN_IF_ERROR(apply_header(trim(line.substr(0, colon)), trim(line.substr(colon + 1)), head, what));
  }
  if (first) return bad_answer(what + " sent an empty response");
  return head;
}

Status ChunkedDecoder::end_of_line(const std::string& what) {
  std::string_view line = trim(line_);
  switch (state_) {
    case State::kSize: {
      std::string_view size = trim(line.substr(0, line.find(';')));
      if (size.empty() || size.size() > 15 ||
          !std::all_of(size.begin(), size.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); })) {
        return bad_answer(what + " sent a malformed chunk size '" + std::string(size.substr(0, 20)) + "'");
      }
      remaining_ = std::stoull(std::string(size), nullptr, 16);
      if (remaining_ > kMaxBodyBytes - body_.size()) {
        return too_big(what);
      }
      state_ = remaining_ == 0 ? State::kTrailer : State::kData;
      break;
    }
    case State::kDataEnd:
      if (!line.empty()) return bad_answer(what + " sent a chunk longer than its size");
      state_ = State::kSize;
      break;
    case State::kTrailer:
      if (line.empty()) state_ = State::kDone;
      break;
    default: break;
  }
  line_.clear();
  return ok_status();
}

Status ChunkedDecoder::feed(std::string_view data, const std::string& what) {
  size_t i = 0;
  while (i < data.size() && state_ != State::kDone) {
    if (state_ == State::kData) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, data.size() - i));
      body_.append(data.substr(i, n));
      remaining_ -= n;
      i += n;
      if (remaining_ == 0) state_ = State::kDataEnd;
      continue;
    }
    char c = data[i++];
    if (c == '\n') {
      TNK_RETURN_IF_ERROR(end_of_line(what));
    } else if (line_.size() < kMaxLineBytes) {
      line_.push_back(c);
    } else {
      return bad_answer(what + " sent a chunk header or trailer line longer than 8 KiB");
    }
  }
  return ok_status();
}

Status ResponseReader::feed(std::string_view data) {
  if (!have_head_) return feed_head(data);
  return feed_body(data);
}

Status ResponseReader::feed_head(std::string_view data) {
  head_buf_.append(data);
  for (;;) {
    auto end = find_head_end(head_buf_);
    if (!end) {
      if (head_buf_.size() > kMaxHeadBytes) return bad_answer(what_ + " sent response headers larger than 64 KiB");
      return ok_status();
    }
    TNK_ASSIGN_OR_RETURN(head_, parse_response_head(std::string_view(head_buf_).substr(0, end->first), what_));
    std::string rest = head_buf_.substr(end->second);
    head_buf_.clear();
    if (head_.status >= 100 && head_.status < 200) {  // 100 Continue and friends: another head follows
      head_buf_ = std::move(rest);
      continue;
    }
    have_head_ = true;
    response_.status = head_.status;
    response_.content_type = head_.content_type;
    if (!head_.chunked && head_.content_length && *head_.content_length > kMaxBodyBytes) return too_big(what_);
    return feed_body(rest);
  }
}

Status ResponseReader::feed_body(std::string_view data) {
  if (status_has_no_body(head_.status) || data.empty()) return ok_status();
  if (head_.chunked) {
    TNK_RETURN_IF_ERROR(chunked_.feed(data, what_));
    if (chunked_.done()) response_.body = std::move(chunked_.body());
    return ok_status();
  }
  if (head_.content_length) {
    size_t want = static_cast<size_t>(*head_.content_length) - response_.body.size();
    response_.body.append(data.substr(0, std::min(want, data.size())));  // extra bytes are ignored
    return ok_status();
  }
  if (response_.body.size() + data.size() > kMaxBodyBytes) return too_big(what_);
  response_.body.append(data);
  return ok_status();
}

bool ResponseReader::complete() const {
  if (!have_head_) return false;
  if (status_has_no_body(head_.status)) return true;
  if (head_.chunked) return chunked_.done();
  if (head_.content_length) return response_.body.size() >= *head_.content_length;
  return false;
}

Status ResponseReader::finish_at_eof() {
  if (complete()) return ok_status();
  if (!have_head_) {
    Error e = failed(what_ + ": the server closed the connection without answering",
                     "check that the inference server is running and serves HTTP on this port");
    e.sys_errno = ECONNRESET;
    return e;
  }
  if (head_.chunked) return bad_answer(what_ + ": the connection closed in the middle of a chunked body");
  if (head_.content_length) {
    return bad_answer(what_ + ": the connection closed after " + std::to_string(response_.body.size()) + " of " +
                      std::to_string(*head_.content_length) + " body bytes");
  }
  return ok_status();  // read-until-close: the end of the connection is the end of the body
}

}  // namespace tnk::inference
