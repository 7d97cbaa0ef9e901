// OpenSSL for the credential routes' TLS (tls_upstream) and the SSH agent's host signature check
// (ssh_host_signature), loaded with dlopen when a route first needs it
// rather than linked into tnk. Linked in, its tables (about 350 KiB of pointers) were relocated at the
// start of every tnk command, `tnk --version` included: a third of its page faults, for what only a
// route's relay uses (docs/ns-backend.md, "The warm path").
#pragma once

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "core/result.h"

namespace tnk::supervisor {

// Every OpenSSL function tnk calls (macros such as SSL_set_mode are spelled as the SSL_ctrl calls they
// stand for).
// clang-format off
#define TNK_OPENSSL_FUNCTIONS(X)                                                                    \
  X(ERR_clear_error) X(ERR_error_string_n) X(ERR_get_error)                                         \
  X(EVP_DigestVerify) X(EVP_DigestVerifyInit) X(EVP_MD_CTX_free) X(EVP_MD_CTX_new)                  \
  X(EVP_PKEY_free) X(EVP_PKEY_new_raw_public_key)                                                   \
  X(SSL_CTX_ctrl) X(SSL_CTX_free) X(SSL_CTX_load_verify_locations) X(SSL_CTX_new)                   \
  X(SSL_CTX_set_default_verify_paths) X(SSL_CTX_set_options) X(SSL_CTX_set_verify)                  \
  X(SSL_connect) X(SSL_ctrl) X(SSL_free) X(SSL_get0_param) X(SSL_get_error) X(SSL_get_verify_result) \
  X(SSL_new) X(SSL_read) X(SSL_set1_host) X(SSL_set_fd) X(SSL_write) X(TLS_client_method)           \
  X(X509_VERIFY_PARAM_set1_ip_asc) X(X509_verify_cert_error_string)
// clang-format on

// The functions, each a pointer of the declared function's own type.
struct OpenSsl {
#define TNK_OPENSSL_POINTER(name) decltype(&::name) name = nullptr;
  TNK_OPENSSL_FUNCTIONS(TNK_OPENSSL_POINTER)
#undef TNK_OPENSSL_POINTER
};

// libssl.so.3's functions: loaded at the first call, once whatever the threads, and kept. A relay calls
// it before it drops its privileges (tls_client_context). The error names the library and its package.
Result<const OpenSsl*> openssl();

}  // namespace tnk::supervisor
