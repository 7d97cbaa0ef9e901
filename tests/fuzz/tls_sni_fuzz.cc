// libFuzzer target for the ClientHello SNI parser the egress proxy runs on the first bytes of every
// CONNECT tunnel to a name (src/net/tls_sni.h). Each prefix of the input is judged as a stream read so
// far; the invariants are the ones the proxy relies on.
// Build and run: scripts/fuzz.sh SECONDS tls_sni (tests/fuzz/CMakeLists.txt builds it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "net/tls_sni.h"

namespace {

bool host_name_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  using tnk::net::SniStatus;
  tnk::net::SniResult whole = tnk::net::client_hello_sni(input);
  // Bounded: the proxy stops reading at kMaxClientHelloBytes, so by then there must be a verdict.
  if (size >= tnk::net::kMaxClientHelloBytes && whole.status == SniStatus::kNeedMore) std::abort();
  if (whole.status == SniStatus::kFound) {
    if (whole.name.empty() || whole.name.size() > 255) std::abort();
    for (char c : whole.name) {
      if (!host_name_byte(c)) std::abort();
    }
  }
  if ((whole.status == SniStatus::kNotTls || whole.status == SniStatus::kMalformed) && whole.reason.empty()) {
    std::abort();
  }
  // A verdict never changes with more bytes: the one on a prefix holds for the whole stream (checked on
  // a few prefixes to keep each run fast).
  for (size_t n : {size / 2, size / 3, size > 0 ? size - 1 : 0}) {
    tnk::net::SniResult part = tnk::net::client_hello_sni(input.substr(0, n));
    if (part.status != SniStatus::kNeedMore && (part.status != whole.status || part.name != whole.name)) std::abort();
  }
  return 0;
}
