// SHA-256 (OpenSSL EVP, libcrypto) as 64 lowercase hex digits. Used by the audit chain and by
// other modules for fingerprints.
#pragma once

#include <string>
#include <string_view>

namespace tnk::audit {

// Never fails in practice; aborts if libcrypto cannot allocate a digest context.
std::string sha256_hex(std::string_view data);

}  // namespace tnk::audit
