// TLS to a credential route's upstream (OpenSSL, loaded by openssl_library): certificates verified
// against the system's CAs and the route's own ca_file, the host name checked and sent as SNI. The
// client context is made before the relay drops its privileges (OpenSSL and the CA files are loaded
// then); connections are made after.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/result.h"
#include "core/unique_fd.h"
#include "net/answer_masker.h"
#include "net/socket_io.h"
#include "supervisor/openssl_library.h"

namespace tnk::supervisor {

// Only ever given what the loaded library made, so it is loaded by then.
struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const { (*openssl())->SSL_CTX_free(ctx); }
};
struct SslFree {
  void operator()(SSL* ssl) const { (*openssl())->SSL_free(ssl); }
};
using SslContext = std::unique_ptr<SSL_CTX, SslCtxFree>;

// A verifying client context: the system's CAs, plus those of `ca_file` (PEM) when it is not empty.
Result<SslContext> tls_client_context(const std::string& ca_file);

// What one TLS pump did: the answer's status (from its first line; 0 when none came) and how it ended.
struct PumpResult {
  int status = 0;
  std::string end;  // "closed", "idle timeout", "stopped", "error: ..."
};

class TlsUpstream {
 public:
  // Handshakes over the connected nonblocking socket `tcp` with `host` (SNI and the certificate's name).
  static Result<TlsUpstream> connect(SSL_CTX* ctx, UniqueFd tcp, const std::string& host,
                                     net::Clock::time_point deadline, int stop_fd);

  // Copies between the TLS connection and the nonblocking socket `local`: what `local` sends goes
  // upstream as it is, what the upstream answers comes back through `masker`. Ends when the upstream
  // has closed and all was passed on (`local` is then shut down for writing), when `local` fails or the
  // masker cannot follow the answer's framing (an error: nothing more is passed), after `idle` without
  // traffic, or when `stop_fd` or `done_fd` is readable.
  PumpResult pump(int local, net::AnswerMasker& masker, std::chrono::milliseconds idle, int stop_fd, int done_fd);

 private:
  TlsUpstream(const OpenSsl& lib, UniqueFd tcp, std::unique_ptr<SSL, SslFree> ssl)
      : lib_(&lib), tcp_(std::move(tcp)), ssl_(std::move(ssl)) {}

  const OpenSsl* lib_;
  UniqueFd tcp_;
  std::unique_ptr<SSL, SslFree> ssl_;
};

}  // namespace tnk::supervisor
