// A validator for the subset of OpenAPI v3 that the agent-sandbox CRDs' structural schemas and
// builtin.json use, applied the way an API server with strict field validation would: type,
// properties (an unknown field is an error unless additionalProperties or
// x-kubernetes-preserve-unknown-fields allows it), required, items, enum, additionalProperties, anyOf,
// x-kubernetes-int-or-string, x-kubernetes-list-type (set, map with its keys), pattern, minLength,
// maxLength, minimum, maximum, format (int32, int64, date-time) and $ref into "definitions".
// Not checked: x-kubernetes-validations (CEL rules), defaults, nullable. Test code: tests/unit only.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace tnk::testing_support {

class OpenApiValidator {
 public:
  // `root` holds "definitions" for $ref (may be null when the schemas have no $ref).
  explicit OpenApiValidator(nlohmann::json root = nullptr) : root_(std::move(root)) {}

  // Every problem of `value` under `schema`, each as "<path>: <what>".
  std::vector<std::string> validate(const nlohmann::json& schema, const nlohmann::json& value,
                                    const std::string& path = "") const {
    std::vector<std::string> problems;
    check(schema, value, path, problems);
    return problems;
  }

 private:
  using json = nlohmann::json;

  const json& resolve(const json& schema) const {
    if (!schema.contains("$ref")) return schema;
    const std::string ref = schema["$ref"];
    const std::string prefix = "#/definitions/";
    return resolve(root_.at("definitions").at(ref.substr(prefix.size())));
  }

  static bool type_matches(const std::string& type, const json& value) {
    if (type == "object") return value.is_object();
    if (type == "array") return value.is_array();
    if (type == "string") return value.is_string();
    if (type == "integer") return value.is_number_integer();
    if (type == "number") return value.is_number();
    if (type == "boolean") return value.is_boolean();
    return false;
  }

  void check(const json& raw, const json& value, const std::string& path, std::vector<std::string>& out) const {
    const json& schema = resolve(raw);
    if (schema.value("x-kubernetes-int-or-string", false)) {
      if (!value.is_number_integer() && !value.is_string()) out.push_back(path + ": not an integer or a string");
    } else if (schema.contains("anyOf")) {
      bool any = false;
      for (const auto& option : schema["anyOf"]) any = any || validate(option, value, path).empty();
      if (!any) out.push_back(path + ": matches none of anyOf");
    }
    if (schema.contains("type") && !type_matches(schema["type"], value)) {
      out.push_back(path + ": is " + std::string(value.type_name()) + ", the schema says " +
                    schema["type"].get<std::string>());
      return;
    }
    if (schema.contains("enum") &&
        std::find(schema["enum"].begin(), schema["enum"].end(), value) == schema["enum"].end()) {
      out.push_back(path + ": " + value.dump() + " is not one of " + schema["enum"].dump());
    }
    if (value.is_string()) check_string(schema, value.get<std::string>(), path, out);
    if (value.is_number()) check_number(schema, value, path, out);
    if (value.is_object()) check_object(schema, value, path, out);
    if (value.is_array()) check_array(schema, value, path, out);
  }

  static void check_string(const json& schema, const std::string& text, const std::string& path,
                           std::vector<std::string>& out) {
    if (schema.contains("maxLength") && text.size() > schema["maxLength"].get<size_t>()) {
      out.push_back(path + ": longer than " + schema["maxLength"].dump());
    }
    if (schema.contains("minLength") && text.size() < schema["minLength"].get<size_t>()) {
      out.push_back(path + ": shorter than " + schema["minLength"].dump());
    }
    if (schema.contains("pattern") && !std::regex_search(text, std::regex(schema["pattern"].get<std::string>()))) {
      out.push_back(path + ": \"" + text + "\" does not match " + schema["pattern"].get<std::string>());
    }
    if (schema.value("format", "") == "date-time" &&
        !std::regex_match(text, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d))"))) {
      out.push_back(path + ": not a date-time");
    }
  }

  static void check_number(const json& schema, const json& value, const std::string& path,
                           std::vector<std::string>& out) {
    if (schema.contains("minimum") && value.get<double>() < schema["minimum"].get<double>()) {
      out.push_back(path + ": below " + schema["minimum"].dump());
    }
    if (schema.contains("maximum") && value.get<double>() > schema["maximum"].get<double>()) {
      out.push_back(path + ": above " + schema["maximum"].dump());
    }
    if (schema.value("format", "") == "int32" && value.is_number_integer() &&
        (value.get<int64_t>() < INT32_MIN || value.get<int64_t>() > INT32_MAX)) {
      out.push_back(path + ": out of int32's range");
    }
  }

  void check_object(const json& schema, const json& value, const std::string& path,
                    std::vector<std::string>& out) const {
    for (const auto& name : schema.value("required", json::array())) {
      if (!value.contains(name.get<std::string>()))
        out.push_back(path + ": required field " + name.dump() + " missing");
    }
    const bool open = schema.value("x-kubernetes-preserve-unknown-fields", false) ||
                      (schema.contains("additionalProperties") && schema["additionalProperties"] == true);
    for (const auto& [key, item] : value.items()) {
      std::string at = path + "." + key;
      if (schema.contains("properties") && schema["properties"].contains(key)) {
        check(schema["properties"][key], item, at, out);
      } else if (schema.contains("additionalProperties") && schema["additionalProperties"].is_object()) {
        check(schema["additionalProperties"], item, at, out);
      } else if (!open) {
        out.push_back(at + ": unknown field");
      }
    }
  }

  void check_array(const json& schema, const json& value, const std::string& path,
                   std::vector<std::string>& out) const {
    for (size_t i = 0; i < value.size(); ++i) {
      if (schema.contains("items")) check(schema["items"], value[i], path + "[" + std::to_string(i) + "]", out);
    }
    const std::string list_type = schema.value("x-kubernetes-list-type", "");
    std::set<std::string> seen;
    for (const auto& item : value) {
      std::string identity = item.dump();
      if (list_type == "map" && item.is_object()) {
        json keys = json::array();
        for (const auto& key : schema.value("x-kubernetes-list-map-keys", json::array())) {
          keys.push_back(item.value(key.get<std::string>(), json()));
        }
        identity = keys.dump();
      } else if (list_type != "set") {
        continue;
      }
      if (!seen.insert(identity).second) out.push_back(path + ": duplicate entry " + identity);
    }
  }

  json root_;
};

}  // namespace tnk::testing_support
