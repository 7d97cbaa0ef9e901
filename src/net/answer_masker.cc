#include "net/answer_masker.h"

#include <cerrno>
#include <charconv>
#include <utility>

#include "net/http_request.h"

namespace tnk::net {
namespace {

// `what` is escaped already (printable_ascii) where it quotes the answer.
Error bad_answer(const std::string& what) {
  Error e = failed("the upstream's answer: " + what);
  e.sys_errno = EBADMSG;
  return e;
}

// RequestBody's errors speak of a request ("bad request: body: ..."); here they are the answer's.
Error framing_error(const Error& error) {
  std::string_view message = error.message;
  std::size_t at = message.find("body: ");
  return bad_answer(std::string(at == std::string_view::npos ? message : message.substr(at)));
}

// "HTTP/1.1 200 OK" -> 200; -1 when the line is not an HTTP/1.x status line.
int status_of(std::string_view line) {
  int status = 0;
  if (line.size() < 12 || !line.starts_with("HTTP/1.") || line[8] != ' ' ||
      std::from_chars(line.data() + 9, line.data() + 12, status).ec != std::errc()) {
    return -1;
  }
  return status;
}

// The head's fields (after its status line) as a request's, so that RequestBody reads its framing with
// the same strict rules (one Content-Length, nothing but "chunked", never both).
RequestHead fields_of(std::string_view head) {
  RequestHead fields;
  std::size_t at = head.find("\r\n");
  while (at != std::string_view::npos && at + 2 < head.size()) {
    at += 2;
    std::size_t eol = head.find("\r\n", at);
    std::string_view line = head.substr(at, eol == std::string_view::npos ? std::string_view::npos : eol - at);
    at = eol;
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    fields.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  return fields;
}

bool has_field(const RequestHead& fields, std::string_view lower_name) {
  for (const auto& field : fields.headers) {
    if (ascii_lower(field.first) == lower_name) return true;
  }
  return false;
}

std::string masked(std::string_view text, const std::vector<std::string>& secrets) {
  Redactor redactor(secrets);
  std::string out = redactor.feed(text);
  return out + redactor.finish();
}

}  // namespace

AnswerMasker::AnswerMasker(std::vector<std::string> secrets) : secrets_(secrets), content_(std::move(secrets)) {}

Result<std::string> AnswerMasker::feed(std::string_view bytes) {
  std::string out;
  while (!bytes.empty() && part_ == Part::kHead) {
    std::size_t before = head_.size();
    head_.append(bytes);
    std::size_t end = head_.find("\r\n\r\n", before >= 3 ? before - 3 : 0);
    if (end == std::string::npos || end + 4 > kMaxAnswerHeadBytes) {
      if (head_.size() > kMaxAnswerHeadBytes) return bad_answer("a head over 64 KiB");
      return out;
    }
    bytes.remove_prefix(end + 4 - before);
    std::string head = std::exchange(head_, {});
    head.resize(end + 4);
    TNK_RETURN_IF_ERROR(start_body(head));
    out += masked(head, secrets_);
  }
  if (part_ != Part::kBody || bytes.empty()) return out;
  TNK_ASSIGN_OR_RETURN(std::string body, take_body(bytes));
  return out + body;
}

// Reads how the body after `head` is framed. A 1xx head is followed by another head; 204 and 304 have
// no body; an answer without Content-Length or Transfer-Encoding runs to the close.
Status AnswerMasker::start_body(std::string_view head) {
  int status = status_of(head.substr(0, head.find("\r\n")));
  if (status < 0) return bad_answer("not an HTTP/1.x status line: " + printable_ascii(head.substr(0, 40)));
  if (status == 101) part_ = Part::kDone;  // what follows is not HTTP: it is not passed
  if (status >= 100 && status < 200) return ok_status();
  if (status == 204 || status == 304) {
    part_ = Part::kDone;
    return ok_status();
  }
  RequestHead fields = fields_of(head);
  part_ = Part::kBody;
  body_ = has_field(fields, "transfer-encoding") ? Body::kChunked
          : has_field(fields, "content-length")  ? Body::kLength
                                                 : Body::kToClose;
  if (body_ == Body::kToClose) return ok_status();
  auto framing = RequestBody::of(fields);
  if (!framing) return framing_error(framing.error());
  framing_ = std::move(*framing);
  if (framing_.complete()) part_ = Part::kDone;  // Content-Length: 0
  return ok_status();
}

// The body's content through the one Redactor, framed again as it becomes ready.
Result<std::string> AnswerMasker::take_body(std::string_view bytes) {
  if (body_ == Body::kToClose) return content_.feed(bytes);
  std::string content;
  auto taken = framing_.take(bytes, &content);
  if (!taken) return framing_error(taken.error());
  std::string out = framed(content_.feed(content));
  if (!framing_.complete()) return out;
  part_ = Part::kDone;
  out += framed(content_.finish());
  return body_ == Body::kChunked ? out + "0\r\n\r\n" : out;
}

// Content as the answer frames it: as it is for a length, a chunk of it for chunked (none when empty:
// an empty chunk would end the body).
std::string AnswerMasker::framed(std::string content) const {
  if (body_ != Body::kChunked || content.empty()) return content;
  char size[20];
  auto end = std::to_chars(size, size + sizeof size, content.size(), 16).ptr;
  return std::string(size, end) + "\r\n" + content + "\r\n";
}

std::string AnswerMasker::finish() {
  switch (part_) {
    case Part::kHead: return masked(std::exchange(head_, {}), secrets_);      // an answer cut in its head
    case Part::kBody: part_ = Part::kDone; return framed(content_.finish());  // no last chunk: it stays cut
    case Part::kDone: return {};
  }
  return {};
}

Result<std::string> mask_whole_answer(std::string_view answer, std::vector<std::string> secrets) {
  AnswerMasker masker(std::move(secrets));
  TNK_ASSIGN_OR_RETURN(std::string out, masker.feed(answer));
  return out + masker.finish();
}

}  // namespace tnk::net
