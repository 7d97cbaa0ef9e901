#include "core/json_fields.h"

namespace tnk {
namespace {

using nlohmann::json;

bool has_nul(const std::string& s) { return s.find('\0') != std::string::npos; }

}  // namespace

const json* JsonFields::find(const char* key) const {
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool JsonFields::has(const char* key) const { return find(key) != nullptr; }

Error JsonFields::error(const char* key, const std::string& problem) const {
  return failed(where_ + ": field '" + key + "' " + problem, hint_);
}

Result<std::string> JsonFields::string(const char* key) const {
  const json* v = find(key);
  if (!v) return error(key, "is missing");
  if (!v->is_string()) return error(key, "must be a string");
  std::string s = v->get<std::string>();
  if (has_nul(s)) return error(key, "must not contain NUL bytes");
  return s;
}

Result<std::string> JsonFields::optional_string(const char* key, const std::string& fallback) const {
  if (!has(key)) return fallback;
  return string(key);
}

Result<long long> JsonFields::integer(const char* key, long long min, long long max) const {
  const json* v = find(key);
  if (!v) return error(key, "is missing");
  bool in_range = false;
  if (v->is_number_unsigned()) {  // checked unsigned first: a huge value must not wrap into the range
    auto u = v->get<unsigned long long>();
    in_range = max >= 0 && u <= static_cast<unsigned long long>(max) && static_cast<long long>(u) >= min;
  } else if (v->is_number_integer()) {
    in_range = v->get<long long>() >= min && v->get<long long>() <= max;
  }
  if (in_range) return v->get<long long>();
  if (min == LLONG_MIN && max == LLONG_MAX) return error(key, "must be an integer");
  if (max == LLONG_MAX) return error(key, "must be an integer of " + std::to_string(min) + " or more");
  if (min == LLONG_MIN) return error(key, "must be an integer of " + std::to_string(max) + " or less");
  return error(key, "must be an integer from " + std::to_string(min) + " to " + std::to_string(max));
}

Result<long long> JsonFields::optional_integer(const char* key, long long fallback, long long min,
                                               long long max) const {
  if (!has(key)) return fallback;
  return integer(key, min, max);
}

Result<double> JsonFields::number(const char* key) const {
  const json* v = find(key);
  if (!v) return error(key, "is missing");
  if (!v->is_number()) return error(key, "must be a number");
  return v->get<double>();
}

Result<bool> JsonFields::boolean(const char* key) const {
  const json* v = find(key);
  if (!v) return error(key, "is missing");
  if (!v->is_boolean()) return error(key, "must be true or false");
  return v->get<bool>();
}

Result<bool> JsonFields::optional_boolean(const char* key, bool fallback) const {
  if (!has(key)) return fallback;
  return boolean(key);
}

Result<std::vector<std::string>> JsonFields::strings(const char* key) const {
  const json* v = find(key);
  if (!v) return error(key, "is missing");
  if (!v->is_array()) return error(key, "must be an array of strings");
  std::vector<std::string> out;
  for (const auto& item : *v) {
    if (!item.is_string()) return error(key, "must be an array of strings");
    out.push_back(item.get<std::string>());
    if (has_nul(out.back())) return error(key, "must not contain NUL bytes");
  }
  return out;
}

Result<std::vector<std::string>> JsonFields::optional_strings(const char* key) const {
  if (!has(key)) return std::vector<std::string>{};
  return strings(key);
}

Result<json> JsonFields::object(const char* key) const {
  const json* v = find(key);
  if (!v) return error(key, "is missing");
  if (!v->is_object()) return error(key, "must be an object");
  return *v;
}

}  // namespace tnk
