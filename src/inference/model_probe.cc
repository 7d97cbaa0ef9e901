#include "inference/model_probe.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <exception>
#include <nlohmann/json.hpp>
#include <vector>

#include "inference/http_client.h"

namespace tnk::inference {
namespace {

using Json = nlohmann::json;

// Where servers report the context window, most specific first (the original's order, §4.6
// step 5, plus vLLM's max_model_len). llama.cpp's meta.n_ctx_train is the model's training
// context, not the running server's, so it is the last resort.
const std::vector<std::vector<const char*>>& context_keys() {
  static const std::vector<std::vector<const char*>> keys = {
      {"context_window"},
      {"context_length"},
      {"max_context_length"},
      {"input_token_limit"},
      {"max_input_tokens"},
      {"n_ctx"},
      {"max_model_len"},
      {"meta", "n_ctx"},
      {"meta", "context_window"},
      {"meta", "context_length"},
      {"meta", "max_context_length"},
      {"limits", "context"},
      {"limits", "input"},
      {"capabilities", "context_window"},
      {"capabilities", "max_context_length"},
      {"capabilities", "input_token_limit"},
      {"meta", "n_ctx_train"},
  };
  return keys;
}

const Json* lookup(const Json& object, const std::vector<const char*>& path) {
  const Json* at = &object;
  for (const char* key : path) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

// A positive integer given as a JSON number or a numeric string.
std::optional<uint64_t> as_count(const Json& v) {
  if (v.is_number_unsigned()) {
    uint64_t n = v.get<uint64_t>();
    return n > 0 ? std::optional<uint64_t>(n) : std::nullopt;
  }
  if (v.is_number_integer()) {
    int64_t n = v.get<int64_t>();
    return n > 0 ? std::optional<uint64_t>(static_cast<uint64_t>(n)) : std::nullopt;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || d < 1 || d > 9.0e15 || d != std::floor(d)) return std::nullopt;
    return static_cast<uint64_t>(d);
  }
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    s.erase(0, s.find_first_not_of(" \t"));
    s.erase(s.find_last_not_of(" \t") + 1);
    if (s.empty() || s.size() > 18 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
    uint64_t n = std::stoull(s);
    return n > 0 ? std::optional<uint64_t>(n) : std::nullopt;
  }
  return std::nullopt;
}

std::optional<uint64_t> context_in(const Json& object) {
  if (!object.is_object()) return std::nullopt;
  for (const auto& path : context_keys()) {
    if (const Json* v = lookup(object, path)) {
      if (auto n = as_count(*v)) return n;
    }
  }
  return std::nullopt;
}

std::string describe_failure(const std::string& base, const Error& error, std::chrono::milliseconds timeout) {
  if (is_bad_answer(error)) return error.message;
  if (error.sys_errno == ETIMEDOUT) {
    return "inference endpoint " + base + " did not answer within " + format_timeout(timeout);
  }
  if (error.sys_errno == ECONNREFUSED) {
    return "inference endpoint " + base + " refused the connection (no server listening)";
  }
  return "inference endpoint " + base + " is unreachable: " + error.message;
}

// Picks the model id and the context window out of a parsed /models document.
ModelsListing listing_from(const Json& doc) {
  ModelsListing listing;
  const Json* chosen = nullptr;
  auto data = doc.find("data");
  bool have_data = data != doc.end() && data->is_array();
  if (have_data) {
    for (const Json& item : *data) {
      auto id = item.is_object() ? item.find("id") : item.end();
      if (!item.is_object() || id == item.end() || !id->is_string()) continue;
      std::string name = model_name_from_id(id->get<std::string>());
      if (name.empty()) continue;
      listing.model_id = name;
      chosen = &item;
      break;
    }
  }
  if (chosen != nullptr) listing.context_window = context_in(*chosen);
  if (have_data) {
    for (const Json& item : *data) {
      if (listing.context_window) break;
      if (&item != chosen) listing.context_window = context_in(item);
    }
  }
  if (!listing.context_window) listing.context_window = context_in(doc);
  return listing;
}

}  // namespace

std::string model_name_from_id(std::string_view id) {
  auto sep = id.find_last_of("/\\");
  return std::string(sep == std::string_view::npos ? id : id.substr(sep + 1));
}

std::optional<ModelsListing> parse_models_listing(std::string_view body) {
  try {
    Json doc = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object()) return std::nullopt;
    return listing_from(doc);
  } catch (const std::exception&) {  // nlohmann may still throw (e.g. type errors); never past here
    return std::nullopt;
  }
}

ModelInfo probe_models(const std::string& base_url, std::chrono::milliseconds timeout, const std::string& bearer) {
  ModelInfo info;
  info.base_url = base_url;
  std::string base = base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  auto response = http_get(base + "/models", timeout, bearer);
  if (!response.ok()) {
    info.reachable = is_bad_answer(response.error());
    info.problem = describe_failure(base, response.error(), timeout);
    return info;
  }
  info.reachable = true;
  std::string asked = "inference endpoint " + base + " answered GET /models ";
  if (response->status < 200 || response->status > 299) {
    info.problem = asked + "with HTTP " + std::to_string(response->status);
    return info;
  }
  auto listing = parse_models_listing(response->body);
  if (!listing) {
    std::string type = response->content_type.empty() ? "none" : response->content_type;
    info.problem = asked + "with something that is not a JSON object (content-type: " + type + ")";
    return info;
  }
  info.context_window = listing->context_window;
  if (!listing->model_id) {
    info.problem = asked + "without a model (no non-empty data[].id)";
    return info;
  }
  info.model_id = listing->model_id;
  return info;
}

}  // namespace tnk::inference
