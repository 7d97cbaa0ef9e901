// YAML read back as JSON, the way a YAML 1.2 reader with the core schema resolves it: a quoted scalar
// is a string; a plain one is null, a boolean, an integer or a float when it reads as one, else a
// string. For the tests of the YAML writer and of the k8s backend (the CRDs are YAML).
#pragma once

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include <regex>
#include <string>

namespace tnk::testing_support {

inline nlohmann::json plain_scalar(const std::string& text) {
  static const std::regex kInt("[-+]?[0-9]+");
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") return nullptr;
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  if (std::regex_match(text, kInt)) return std::stoll(text);
  if (std::regex_match(text, kFloat)) return std::stod(text);
  return text;
}

inline nlohmann::json yaml_to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& entry : node) out[entry.first.as<std::string>()] = yaml_to_json(entry.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) out.push_back(yaml_to_json(item));
      return out;
    }
    case YAML::NodeType::Scalar: return node.Tag() == "!" ? nlohmann::json(node.Scalar()) : plain_scalar(node.Scalar());
    default: return nullptr;
  }
}

}  // namespace tnk::testing_support
