// Remembers the last successful /models probe of one endpoint for a few seconds, so a burst of
// tnk commands asks the server once. The cache is advisory: any problem reading or writing it
// just means probing again.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "inference/model_probe.h"

namespace tnk::inference {

inline constexpr int64_t kModelCacheMaxAgeSeconds = 30;

// The cached probe of `base_url` when the file holds one taken at most `max_age_s` seconds before
// `now` (unix seconds). Missing, unreadable, malformed, stale, future-dated or other-URL entries
// give nullopt.
std::optional<ModelInfo> read_cached(const std::filesystem::path& cache_file, const std::string& base_url, int64_t now,
                                     int64_t max_age_s);

// Stores `info` for `base_url` (atomically, mode 0600, creating the directory) when it is a
// successful probe: reachable, a model id and no problem. Anything else, and any write error,
// is silently ignored.
void write_cache(const std::filesystem::path& cache_file, const std::string& base_url, const ModelInfo& info,
                 int64_t now);

}  // namespace tnk::inference
