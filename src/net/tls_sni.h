// The server name (SNI) of a TLS ClientHello, read from the first bytes a client sends through a CONNECT
// tunnel, without decrypting anything: the egress proxy requires it to equal the CONNECT name, so that an
// allowed name on a shared front end (a CDN) cannot carry a handshake for another tenant (domain fronting).
// Bounded and strict: the hello may span several TLS records and reads, but never more than
// kMaxClientHelloBytes of stream; anything ambiguous is malformed, never guessed.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tnk::net {

inline constexpr std::size_t kMaxClientHelloBytes = 16 * 1024;  // records and their headers, from the start

enum class SniStatus {
  kNeedMore,   // nothing wrong so far; the hello is not complete yet
  kFound,      // a complete ClientHello with one host_name: `name`, in lower case
  kNoSni,      // a complete ClientHello without a server_name extension
  kNotTls,     // the stream does not start with a TLS handshake record
  kMalformed,  // a TLS handshake that is not a well-formed ClientHello, or one larger than the bound
};

struct SniResult {
  SniStatus status = SniStatus::kNeedMore;
  std::string name;    // kFound: the host name
  std::string reason;  // kNotTls, kMalformed: what is wrong, in printable ASCII
};

// Judges the start of a client's stream (everything it sent so far, from the first byte on).
SniResult client_hello_sni(std::string_view stream);

}  // namespace tnk::net
