// The hash chain shared by the writer and the verifier: each record's `prev` is the sha256 of the
// previous line's bytes (without its newline); the first record's `prev` is kGenesisPrev.
#pragma once

#include <cstddef>
#include <string_view>

namespace tnk::audit {

inline constexpr std::string_view kGenesisPrev = "0000000000000000000000000000000000000000000000000000000000000000";

// A record longer than this is refused by the writer and reported by the verifier.
inline constexpr size_t kMaxRecordBytes = size_t{64} << 20;

inline bool is_sha256_hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace tnk::audit
