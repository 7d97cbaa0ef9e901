// JSON values written as YAML (`-o yaml`, and the k8s backend's objects for `kubectl apply -f -`). Block
// style, two spaces per level. A string is written plain only when no YAML 1.1 or 1.2 reader can take it
// for anything else (a number, a boolean, null, a date, an anchor, a comment...); every other string is
// double-quoted with JSON's escapes, which YAML's double-quoted style shares. So reading the output with
// any YAML parser gives back the same JSON value.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tnk {

// One document, without the "---" line.
std::string to_yaml(const nlohmann::json& value);

// A stream of documents, each after a "---" line; `comments` first, each as a "# " line (a stream
// that starts with comments is still one kubectl reads).
std::string to_yaml_stream(const std::vector<nlohmann::json>& documents, const std::vector<std::string>& comments);

// Whether `text` may be written as a plain scalar (exposed for its tests).
bool yaml_plain_safe(const std::string& text);

}  // namespace tnk
