#include "output/yaml.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <string_view>

namespace tnk {
namespace {

using json = nlohmann::json;

// Words YAML 1.1 readers (PyYAML, Go's yaml.v2) take for booleans or null, compared case-insensitively.
constexpr std::array<std::string_view, 10> kSpecialWords = {"y",     "yes", "n",   "no",   "true",
                                                            "false", "on",  "off", "null", "~"};

bool is_special_word(const std::string& text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return std::find(kSpecialWords.begin(), kSpecialWords.end(), lower) != kSpecialWords.end();
}

// JSON's escaped string, with the characters YAML does not allow unescaped (DEL and the C1 controls but
// NEL, which JSON leaves as they are) escaped too.
std::string quoted(const std::string& text) {
  std::string dumped = json(text).dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(dumped.size());
  for (size_t i = 0; i < dumped.size(); ++i) {
    auto c = static_cast<unsigned char>(dumped[i]);
    auto next = i + 1 < dumped.size() ? static_cast<unsigned char>(dumped[i + 1]) : 0;
    if (c == 0x7f) {
      out += "\\u007f";
    } else if (c == 0xc2 && next >= 0x80 && next <= 0x9f && next != 0x85) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(next));
      out += escape;
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string scalar(const json& value) {
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    return yaml_plain_safe(text) ? text : quoted(text);
  }
  if (value.is_object()) return "{}";  // only empty ones reach here
  if (value.is_array()) return "[]";
  return value.dump();  // null, true, false and numbers are written alike in JSON and YAML
}

bool is_block(const json& value) { return (value.is_object() || value.is_array()) && !value.empty(); }

void emit(const json& value, size_t indent, std::string& out);

// A mapping's entries; with `inline_first` the first one continues the line its caller began ("- ").
void emit_map(const json& map, size_t indent, bool inline_first, std::string& out) {
  bool first = true;
  for (const auto& [key, value] : map.items()) {
    if (!(first && inline_first)) out.append(indent, ' ');
    first = false;
    out += scalar(json(key)) + ":";
    if (is_block(value)) {
      out += "\n";
      emit(value, indent + 2, out);
    } else {
      out += " " + scalar(value) + "\n";
    }
  }
}

void emit_seq(const json& seq, size_t indent, std::string& out) {
  for (const auto& item : seq) {
    out.append(indent, ' ');
    if (item.is_object() && !item.empty()) {
      out += "- ";
      emit_map(item, indent + 2, true, out);
    } else if (is_block(item)) {
      out += "-\n";
      emit(item, indent + 2, out);
    } else {
      out += "- " + scalar(item) + "\n";
    }
  }
}

void emit(const json& value, size_t indent, std::string& out) {
  if (!is_block(value)) {
    out.append(indent, ' ');
    out += scalar(value) + "\n";
  } else if (value.is_object()) {
    emit_map(value, indent, false, out);
  } else {
    emit_seq(value, indent, out);
  }
}

}  // namespace

// Letters, digits and `_./@:-`, starting with a letter, '_' or '/', not ending in ':', and not a word
// that reads as a boolean or null: such a string is a string to every YAML reader. The rest is quoted.
bool yaml_plain_safe(const std::string& text) {
  if (text.empty() || is_special_word(text) || text.back() == ':') return false;
  auto first = static_cast<unsigned char>(text.front());
  if (!std::isalpha(first) && first != '_' && first != '/') return false;
  return std::all_of(text.begin(), text.end(), [](char ch) {
    auto c = static_cast<unsigned char>(ch);
    return c < 0x80 && (std::isalnum(c) || c == '_' || c == '.' || c == '/' || c == '@' || c == ':' || c == '-');
  });
}

std::string to_yaml(const json& value) {
  std::string out;
  emit(value, 0, out);
  return out;
}

std::string to_yaml_stream(const std::vector<json>& documents, const std::vector<std::string>& comments) {
  std::string out;
  for (std::string comment : comments) {
    std::replace(comment.begin(), comment.end(), '\n', ' ');  // one comment line each
    out += "# " + comment + "\n";
  }
  for (const auto& document : documents) out += "---\n" + to_yaml(document);
  return out;
}

}  // namespace tnk
