// Typed reads of the fields of one JSON object (a file tnk wrote, a protocol message), the one place
// that checks a field's presence, type and range. Every error is "<where>: field '<key>' <problem>",
// so it names the file or message and the key, and carries the caller's hint.
// Missing and null are the same: a required field is then an error, an optional one gives its
// fallback; a value of the wrong type is an error either way. Strings never hold a NUL byte.
#pragma once

#include <climits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace tnk {

class JsonFields {
 public:
  // `object` must outlive this and be a JSON object. `where` starts every error: "sandbox record
  // /x/sandbox.json is corrupt", "agent message exec".
  JsonFields(const nlohmann::json& object, std::string where, std::string hint = {})
      : object_(object), where_(std::move(where)), hint_(std::move(hint)) {}
  JsonFields(nlohmann::json&&, std::string, std::string = {}) = delete;  // it would dangle

  Result<std::string> string(const char* key) const;
  Result<std::string> optional_string(const char* key, const std::string& fallback = {}) const;
  // An integer within [min, max] (a huge unsigned value is out of range, never wrapped).
  Result<long long> integer(const char* key, long long min = LLONG_MIN, long long max = LLONG_MAX) const;
  Result<long long> optional_integer(const char* key, long long fallback, long long min = LLONG_MIN,
                                     long long max = LLONG_MAX) const;
  Result<double> number(const char* key) const;
  Result<bool> boolean(const char* key) const;
  Result<bool> optional_boolean(const char* key, bool fallback) const;
  Result<std::vector<std::string>> strings(const char* key) const;
  Result<std::vector<std::string>> optional_strings(const char* key) const;
  Result<nlohmann::json> object(const char* key) const;

  bool has(const char* key) const;
  // The error for a check of the caller's own ("must name a program"), framed like the others.
  Error error(const char* key, const std::string& problem) const;

 private:
  const nlohmann::json* find(const char* key) const;  // nullptr when missing or null

  const nlohmann::json& object_;
  std::string where_, hint_;
};

}  // namespace tnk
