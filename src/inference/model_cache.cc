#include "inference/model_cache.h"

#include <exception>
#include <nlohmann/json.hpp>

#include "core/files.h"

namespace tnk::inference {
namespace {

using Json = nlohmann::json;
constexpr int kCacheVersion = 1;

std::string normalized(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

std::optional<ModelInfo> from_json(const Json& doc, const std::string& base_url, int64_t now, int64_t max_age_s) {
  if (!doc.is_object() || doc.value("version", 0) != kCacheVersion) return std::nullopt;
  if (normalized(doc.value("base_url", std::string())) != normalized(base_url)) return std::nullopt;
  auto at = doc.find("probed_at");
  if (at == doc.end() || !at->is_number_integer()) return std::nullopt;
  int64_t probed_at = at->get<int64_t>();
  if (probed_at > now || now - probed_at > max_age_s) return std::nullopt;
  auto id = doc.find("model_id");
  if (id == doc.end() || !id->is_string() || id->get<std::string>().empty()) return std::nullopt;
  ModelInfo info;
  info.reachable = true;
  info.base_url = base_url;
  info.model_id = id->get<std::string>();
  auto ctx = doc.find("context_window");
  if (ctx != doc.end() && ctx->is_number_unsigned() && ctx->get<uint64_t>() > 0) {
    info.context_window = ctx->get<uint64_t>();
  }
  return info;
}

}  // namespace

std::optional<ModelInfo> read_cached(const std::filesystem::path& cache_file, const std::string& base_url, int64_t now,
                                     int64_t max_age_s) {
  auto text = read_file(cache_file);
  if (!text.ok()) return std::nullopt;
  try {
    Json doc = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
    return from_json(doc, base_url, now, max_age_s);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void write_cache(const std::filesystem::path& cache_file, const std::string& base_url, const ModelInfo& info,
                 int64_t now) {
  if (!info.reachable || !info.model_id || info.model_id->empty() || !info.problem.empty()) return;
  Json doc = {{"version", kCacheVersion},
              {"base_url", normalized(base_url)},
              {"probed_at", now},
              {"model_id", *info.model_id},
              {"context_window", info.context_window ? Json(*info.context_window) : Json(nullptr)}};
  std::string text;
  try {
    text = doc.dump(2) + "\n";
  } catch (const std::exception&) {  // invalid UTF-8 in a model id
    return;
  }
  if (cache_file.has_parent_path() && !make_dirs(cache_file.parent_path()).ok()) return;
  (void)write_file_atomic(cache_file, text, 0600);
}

}  // namespace tnk::inference
