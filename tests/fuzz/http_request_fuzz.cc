// libFuzzer target for the egress proxy's request-head parser (and what the proxy derives from a
// parsed head: the allow-list match and the origin-form head sent upstream).
// Build and run: scripts/fuzz.sh SECONDS http_request (tests/fuzz/CMakeLists.txt builds it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "net/domain_match.h"
#include "net/http_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto parsed = tnk::net::parse_request_head(input);
  if (!parsed.ok()) {
    int status = tnk::net::http_status_for(parsed.error());
    if (status != 400 && status != 431) std::abort();
    return 0;
  }
  if (!parsed->has_value()) return 0;
  const tnk::net::RequestHead& head = **parsed;
  // Invariants the proxy relies on.
  if (head.head_bytes > size || head.head_bytes > tnk::net::kMaxRequestHeadBytes) std::abort();
  if (head.host.empty() || head.port == 0) std::abort();
  if (!head.is_connect && (head.path.empty() || head.path.front() != '/')) std::abort();
  static const std::vector<std::string> allow = {"example.org", "*.example.org:8443", "[::1]", "10.0.0.1"};
  std::string rule;
  (void)tnk::net::domain_allowed(allow, head.host, head.port, &rule);
  if (!head.is_connect) {
    std::string upstream = tnk::net::origin_form_head(head);
    // The head sent upstream must parse as one complete request head of its own (in origin form it is
    // refused by our parser, so just check its framing).
    if (upstream.find("\r\n\r\n") != upstream.size() - 4) std::abort();
  }
  return 0;
}
