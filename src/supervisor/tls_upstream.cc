#include "supervisor/tls_upstream.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tnk::supervisor {
namespace {

constexpr std::size_t kPumpChunk = 16 * 1024;

// OpenSSL's last error as text (its queue emptied), or `fallback` when it has none.
std::string ssl_error_text(const OpenSsl& lib, const char* fallback) {
  unsigned long code = lib.ERR_get_error();
  lib.ERR_clear_error();
  if (code == 0) return fallback;
  char text[256];
  lib.ERR_error_string_n(code, text, sizeof text);
  return text;
}

bool ip_literal(const std::string& host) {
  unsigned char buffer[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), buffer) == 1 || ::inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

// Waits for the socket as OpenSSL asked (`error`: SSL_ERROR_WANT_READ or _WANT_WRITE).
net::Ready wait_for(int fd, int error, net::Clock::time_point deadline, int stop_fd) {
  return net::wait_ready(fd, error == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN, deadline, stop_fd);
}

// "HTTP/1.1 200 ..." -> 200; 0 until a whole status code has arrived.
int status_of(std::string_view first_bytes) {
  if (!first_bytes.starts_with("HTTP/") || first_bytes.size() < 12 || first_bytes[8] != ' ') return 0;
  int status = 0;
  for (char c : first_bytes.substr(9, 3)) {
    if (c < '0' || c > '9') return 0;
    status = status * 10 + (c - '0');
  }
  return status;
}

}  // namespace

Result<SslContext> tls_client_context(const std::string& ca_file) {
  TNK_ASSIGN_OR_RETURN(const OpenSsl* lib, openssl());
  SslContext ctx(lib->SSL_CTX_new(lib->TLS_client_method()));
  if (!ctx) return failed("creating a TLS context: " + ssl_error_text(*lib, "out of memory"));
  lib->SSL_CTX_ctrl(ctx.get(), SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, nullptr);  // the macro's call
  lib->SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  // An upstream that closes without close_notify ends its answer; HTTP's framing says whether it was whole.
  lib->SSL_CTX_set_options(ctx.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
  if (lib->SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
    return failed("loading the system's CA certificates: " + ssl_error_text(*lib, "unknown error"),
                  "install the Debian package ca-certificates");
  }
  if (!ca_file.empty() && lib->SSL_CTX_load_verify_locations(ctx.get(), ca_file.c_str(), nullptr) != 1) {
    return failed("cannot load the CA certificates of " + ca_file + ": " + ssl_error_text(*lib, "unknown error"),
                  "ca_file must name a readable PEM file of CA certificates");
  }
  return ctx;
}

Result<TlsUpstream> TlsUpstream::connect(SSL_CTX* ctx, UniqueFd tcp, const std::string& host,
                                         net::Clock::time_point deadline, int stop_fd) {
  TNK_ASSIGN_OR_RETURN(const OpenSsl* lib, openssl());
  std::unique_ptr<SSL, SslFree> ssl(lib->SSL_new(ctx));
  if (!ssl || lib->SSL_set_fd(ssl.get(), tcp.get()) != 1) {
    return failed("creating a TLS connection: " + ssl_error_text(*lib, "?"));
  }
  // SSL_set_mode's call.
  lib->SSL_ctrl(ssl.get(), SSL_CTRL_MODE, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER, nullptr);
  if (ip_literal(host)) {
    lib->X509_VERIFY_PARAM_set1_ip_asc(lib->SSL_get0_param(ssl.get()), host.c_str());
  } else {
    // SSL_set_tlsext_host_name's call, without the macro's C cast.
    lib->SSL_ctrl(ssl.get(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(host.c_str()));
    lib->SSL_set1_host(ssl.get(), host.c_str());
  }
  for (;;) {
    int rc = lib->SSL_connect(ssl.get());
    if (rc == 1) break;
    int error = lib->SSL_get_error(ssl.get(), rc);
    if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE) {
      long verify = lib->SSL_get_verify_result(ssl.get());
      std::string why = verify != X509_V_OK ? std::string("certificate: ") + lib->X509_verify_cert_error_string(verify)
                                            : ssl_error_text(*lib, "the connection ended");
      return failed("TLS with " + host + " failed: " + why);
    }
    net::Ready ready = wait_for(tcp.get(), error, deadline, stop_fd);
    if (ready == net::Ready::kTimeout) return sys_error(ETIMEDOUT, "TLS with " + host + " timed out");
    if (ready == net::Ready::kStopped) return sys_error(ECANCELED, "TLS with " + host);
  }
  return TlsUpstream(*lib, std::move(tcp), std::move(ssl));
}

namespace {

// One pump's buffers and steps. Each step returns whether it made progress; a failure sets `failure`.
class TlsPump {
 public:
  TlsPump(const OpenSsl& lib, SSL* ssl, int local, net::AnswerMasker& masker)
      : lib_(lib), ssl_(ssl), local_(local), masker_(masker) {}

  // The client's bytes, as they come, into `up_` (one piece at a time).
  bool read_local() {
    if (local_eof_ || !up_.empty()) return false;
    ssize_t n = ::recv(local_, buffer_, sizeof buffer_, MSG_DONTWAIT);
    if (n > 0) up_.assign(buffer_, static_cast<size_t>(n));
    if (n == 0) local_eof_ = true;
    if (n < 0 && errno != EAGAIN && errno != EINTR) failure = std::string("reading the request: ") + strerror(errno);
    return n >= 0;
  }

  bool write_upstream() {
    if (up_.empty()) return false;
    int rc = lib_.SSL_write(ssl_, up_.data(), static_cast<int>(up_.size()));
    if (rc > 0) up_.erase(0, static_cast<size_t>(rc));
    return rc > 0 || wants(rc, "sending upstream: ");
  }

  // The answer through the masker into `down_`; at its end, what the masker held back.
  bool read_upstream(PumpResult& result) {
    if (upstream_eof || !down_.empty()) return false;
    int rc = lib_.SSL_read(ssl_, buffer_, sizeof buffer_);
    if (rc > 0) {
      if (first_.size() < 12) first_.append(buffer_, std::min<size_t>(static_cast<size_t>(rc), 12 - first_.size()));
      if (result.status == 0) result.status = status_of(first_);
      auto masked = masker_.feed(std::string_view(buffer_, static_cast<size_t>(rc)));
      if (!masked) {
        failure = masked.error().message;
        return false;
      }
      down_ = std::move(*masked);
      return true;
    }
    int e = lib_.SSL_get_error(ssl_, rc);
    if (e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL) {
      lib_.ERR_clear_error();
      upstream_eof = true;
      down_ = masker_.finish();
      return true;
    }
    return wants(rc, "reading the answer: ");
  }

  bool write_local() {
    if (down_.empty()) return false;
    ssize_t n = ::send(local_, down_.data(), down_.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) down_.erase(0, static_cast<size_t>(n));
    if (n < 0 && errno != EAGAIN && errno != EINTR) failure = std::string("passing the answer on: ") + strerror(errno);
    return n > 0;
  }

  bool answered() const { return upstream_eof && down_.empty(); }
  short tcp_events() const { return tcp_events_; }
  short local_events() const {
    return static_cast<short>((!local_eof_ && up_.empty() ? POLLIN : 0) | (down_.empty() ? 0 : POLLOUT));
  }
  void new_turn() { tcp_events_ = 0; }

  bool upstream_eof = false;
  std::string failure;

 private:
  // After an SSL call that did not move bytes: what the socket must become (false), or the failure.
  bool wants(int rc, const char* what) {
    int e = lib_.SSL_get_error(ssl_, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      tcp_events_ |= e == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN;
    } else {
      failure = what + ssl_error_text(lib_, "the connection ended");
    }
    return false;
  }

  const OpenSsl& lib_;
  SSL* ssl_;
  int local_;
  net::AnswerMasker& masker_;
  std::string up_, down_, first_;
  bool local_eof_ = false;
  short tcp_events_ = 0;
  char buffer_[kPumpChunk];
};

}  // namespace

// One loop, nonblocking both ways: each turn tries every step that could make progress, and polls only
// when none did (OpenSSL may hold decrypted bytes that no poll would announce).
PumpResult TlsUpstream::pump(int local, net::AnswerMasker& masker, std::chrono::milliseconds idle, int stop_fd,
                             int done_fd) {
  PumpResult result;
  TlsPump pump(*lib_, ssl_.get(), local, masker);
  for (;;) {
    pump.new_turn();
    bool progress = pump.read_local();
    progress |= pump.write_upstream();
    progress |= pump.read_upstream(result);
    progress |= pump.write_local();
    if (!pump.failure.empty()) {
      result.end = "error: " + pump.failure;
      return result;
    }
    if (pump.answered()) {
      ::shutdown(local, SHUT_WR);
      result.end = "closed";
      return result;
    }
    if (progress) continue;
    pollfd fds[4] = {{tcp_.get(), pump.tcp_events(), 0},
                     {local, pump.local_events(), 0},
                     {stop_fd, POLLIN, 0},
                     {done_fd, POLLIN, 0}};
    int n = ::poll(fds, 4, idle.count() > 0 ? static_cast<int>(idle.count()) : -1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || (fds[2].revents | fds[3].revents) != 0) {
      result.end = n < 0 ? std::string("error: poll: ") + strerror(errno) : n == 0 ? "idle timeout" : "stopped";
      return result;
    }
    if ((fds[1].revents & (POLLHUP | POLLERR)) != 0 && (fds[1].revents & POLLIN) == 0) {
      result.end = "error: the client went away";
      return result;
    }
  }
}

}  // namespace tnk::supervisor
