// A request head, parsed strictly (anything ambiguous is a 400, never a guess): the egress proxy's
// (CONNECT or absolute-form) and the inference forwarder's (origin-form), and the origin-form head that
// the proxy sends upstream for plain-http requests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace tnk::net {

inline constexpr std::size_t kMaxRequestHeadBytes = 16 * 1024;  // request line + headers + empty line

struct RequestHead {
  std::string method;   // as sent, upper-case: "CONNECT", "GET"
  std::string target;   // as sent: "example.org:443", "http://example.org/x"
  std::string version;  // "HTTP/1.1" or "HTTP/1.0"
  std::string host;     // from the target (never the Host header): lowercased, IPv6 without brackets
  uint16_t port = 0;    // from the target; 80 when an http URL has none
  bool is_connect = false;
  std::string path;                                          // the origin-form target ("/x?y"); empty for CONNECT
  std::vector<std::pair<std::string, std::string>> headers;  // in order; names as sent, values trimmed
  std::size_t head_bytes = 0;                                // up to and including the empty line
};

// Which request targets a parser accepts: a proxy's (CONNECT host:port and absolute-form http:// URLs)
// or a server's (origin-form "/path?query" only; host and port stay empty, CONNECT is an ordinary method).
enum class RequestForm { kProxy, kOrigin };

// Parses the start of a client's byte stream. nullopt: the head is not complete yet (and nothing seen so
// far is wrong). Accepts the targets of `form`; rejects every other form, https:// URLs, lower-case
// methods, user info, header folding, control bytes, a missing Host in an HTTP/1.1 non-CONNECT request
// and duplicate Host headers. Errors carry EMSGSIZE when the head passes kMaxRequestHeadBytes, EBADMSG
// otherwise.
Result<std::optional<RequestHead>> parse_request_head(std::string_view buffered,
                                                      RequestForm form = RequestForm::kProxy);

// The status to answer a parse error with: 431 for an oversized head, 400 for everything else.
int http_status_for(const Error& parse_error);

// The head sent upstream for an absolute-form request: the request line in origin-form, Host from the
// target, the client's headers minus hop-by-hop ones (Connection and what it lists, Proxy-Connection,
// Keep-Alive, Proxy-Authorization), and "Connection: close" so that each proxied connection carries one
// request to the host that the policy checked.
std::string origin_form_head(const RequestHead& head);

// "bad request: <what>", with EBADMSG (http_status_for: 400). `what` may quote the client's bytes: they
// are escaped (printable_ascii), so the message is safe in the 400 answer, a log line and JSON.
Error bad_request(const std::string& what);

// `text` with every byte outside printable ASCII (controls, DEL, >= 0x80) and the backslash written as
// "\xNN": the escaped text reads back unambiguously.
std::string printable_ascii(std::string_view text);

// `text` with ASCII letters in lower case (header names compare this way).
std::string ascii_lower(std::string_view text);

// "host" or "host:port", with brackets around IPv6 literals.
std::string host_port_text(const std::string& host, uint16_t port, bool with_port = true);

}  // namespace tnk::net
