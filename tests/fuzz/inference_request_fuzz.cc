// libFuzzer target for what the inference forwarder decides from a client's bytes: the origin-form
// request head, the path decision (net/inference_paths.cc) and where the body ends (net/request_body.cc).
// Build and run: scripts/fuzz.sh SECONDS inference_request (tests/fuzz/CMakeLists.txt builds it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "net/http_request.h"
#include "net/inference_paths.h"
#include "net/request_body.h"

namespace {

// How much of `rest` the body takes, fed in two reads split at `split`; nullopt for malformed framing.
std::optional<size_t> taken(tnk::net::RequestBody body, std::string_view rest, size_t split) {
  size_t total = 0;
  for (std::string_view piece : {rest.substr(0, split), rest.substr(split)}) {
    auto n = body.take(piece);
    if (!n.ok()) return std::nullopt;
    if (*n > piece.size() || (*n < piece.size() && !body.complete())) std::abort();
    total += *n;
    if (*n < piece.size()) break;
  }
  return total;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto parsed = tnk::net::parse_request_head(input, tnk::net::RequestForm::kOrigin);
  if (!parsed.ok() || !parsed->has_value()) return 0;
  const tnk::net::RequestHead& head = **parsed;
  if (head.path.empty() || head.path.front() != '/' || head.head_bytes > size) std::abort();
  std::string_view path = std::string_view(head.path).substr(0, head.path.find('?'));
  if (!tnk::net::inference_refusal(head) && path != "/") {
    // What passes has no percent-encoding and no empty or dot segment in its path.
    std::string segments = std::string(path) + "/";
    if (path.find('%') != std::string_view::npos || segments.find("/../") != std::string::npos ||
        segments.find("/./") != std::string::npos || segments.find("//") != std::string::npos)
      std::abort();
  }
  auto body = tnk::net::RequestBody::of(head);
  if (!body.ok()) return 0;
  std::string_view rest = input.substr(head.head_bytes);
  // Where the body ends cannot depend on how the bytes arrived.
  if (taken(*body, rest, rest.size()) != taken(*body, rest, rest.size() / 3)) std::abort();
  return 0;
}
