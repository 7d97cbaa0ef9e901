// Sizes written by people: "2GiB", "512MiB", "1.5GiB", "2G", "2048M", "100KiB", "4096B". Used by
// tnk.toml ([sandbox] memory/disk) and by manifests.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace tnk {

// Units are binary and case-insensitive: B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB. A bare number
// means GiB. A fraction is allowed ("1.5GiB"); the result is rounded down to whole bytes.
Result<uint64_t> parse_size(std::string_view text);

// The largest unit that divides `bytes` exactly: 2GiB, 512MiB, 1536MiB, 100KiB, 4097B.
// parse_size(format_size(n)) == n.
std::string format_size(uint64_t bytes);

}  // namespace tnk
