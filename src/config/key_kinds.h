// The kinds of value a tnk.toml key takes, for the key table (keys.cc). Internal to config/.
// Each kind reads a value from a TNK_* variable's text (from_text) and from the file (from_file, or
// from_table for a table), nullopt when it is not acceptable, and shows one (show: the text of
// `config show`, json: its JSON). The file and the variable go through the same validators
// (config_values.h), so the two accept the same values where the types allow.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "config/config_values.h"
#include "config/keys.h"
#include "config/size.h"

namespace tnk::config {

// A string checked by a validator of config_values.h; those of directories take HOME as well.
template <class Parse>
struct Text {
  Parse parse;

  auto from_text(std::string_view input, const std::filesystem::path& home) const {
    if constexpr (std::is_invocable_v<Parse, std::string_view, const std::filesystem::path&>) {
      return parse(input, home);
    } else {
      return parse(input);
    }
  }
  auto from_file(const TomlScalar& value, const std::filesystem::path& home) const
      -> decltype(from_text(std::string_view{}, home)) {
    if (const auto* text = std::get_if<std::string_view>(&value)) return from_text(*text, home);
    return std::nullopt;
  }
  template <class T>
  std::string show(const T& value) const {
    if constexpr (std::is_same_v<T, std::string>) {
      return value;
    } else {
      return to_string(value);  // NetworkPolicy
    }
  }
  template <class T>
  nlohmann::json json(const T& value) const {
    return show(value);
  }
};

// Clang before 17 does not deduce an aggregate's template arguments (C++20's P1816) by itself.
template <class Parse>
Text(Parse) -> Text<Parse>;

// An integer in [min, max]: a TOML integer in the file, decimal digits in a variable.
template <class U>
struct Integer {
  int64_t min;
  int64_t max;

  std::optional<U> from_text(std::string_view input, const std::filesystem::path&) const {
    auto value = parse_uint(input, static_cast<uint64_t>(min), static_cast<uint64_t>(max));
    if (!value) return std::nullopt;
    return static_cast<U>(*value);
  }
  std::optional<U> from_file(const TomlScalar& value, const std::filesystem::path&) const {
    const auto* number = std::get_if<int64_t>(&value);
    if (number == nullptr || *number < min || *number > max) return std::nullopt;
    return static_cast<U>(*number);
  }
  std::string show(U value) const { return std::to_string(value); }
  nlohmann::json json(U value) const { return value; }
};

// A TOML boolean in the file; 1, 0, true or false in a variable.
struct Flag {
  std::optional<bool> from_text(std::string_view input, const std::filesystem::path&) const {
    return parse_bool_text(input);
  }
  std::optional<bool> from_file(const TomlScalar& value, const std::filesystem::path&) const {
    if (const auto* flag = std::get_if<bool>(&value)) return *flag;
    return std::nullopt;
  }
  std::string show(bool value) const { return value ? "true" : "false"; }
  nlohmann::json json(bool value) const { return value; }
};

// Bytes: "2GiB", or a bare integer of GiB in the file. Shown in the largest exact unit, JSON in bytes.
struct Size {
  std::optional<uint64_t> from_text(std::string_view input, const std::filesystem::path&) const {
    return parse_size_text(input);
  }
  std::optional<uint64_t> from_file(const TomlScalar& value, const std::filesystem::path&) const {
    if (const auto* text = std::get_if<std::string_view>(&value)) return parse_size_text(*text);
    const auto* number = std::get_if<int64_t>(&value);
    constexpr int64_t kMaxGiB = std::numeric_limits<int64_t>::max() >> 30;
    if (number == nullptr || *number <= 0 || *number > kMaxGiB) return std::nullopt;
    return static_cast<uint64_t>(*number) * kGiB;
  }
  std::string show(uint64_t value) const { return format_size(value); }
  nlohmann::json json(uint64_t value) const { return value; }
};

// A table of name = "served model", both non-empty printable strings; an error names the entry.
struct Aliases {
  using Map = std::map<std::string, std::string>;

  std::optional<Map> from_text(std::string_view, const std::filesystem::path&) const {
    return std::nullopt;  // no variable sets a table
  }
  std::optional<Map> from_table(const TomlValue& value, std::optional<size_t>& refused_entry) const {
    if (!value.table) return std::nullopt;
    Map aliases;
    for (size_t i = 0; i < value.table->size(); ++i) {
      const auto& [alias, entry] = (*value.table)[i];
      const auto* model = std::get_if<std::string_view>(&entry);
      if (alias.empty() || model == nullptr || model->empty() || !parse_model_name(alias) ||
          !parse_model_name(*model)) {
        refused_entry = i;
        return std::nullopt;
      }
      aliases[std::string(alias)] = std::string(*model);
    }
    return aliases;
  }
  std::string show(const Map& aliases) const {
    std::string text;
    for (const auto& [alias, model] : aliases) text += (text.empty() ? "" : ", ") + alias + "=" + model;
    return text.empty() ? "<none>" : text;
  }
  nlohmann::json json(const Map& aliases) const { return nlohmann::json(aliases); }
};

template <class Kind>
inline constexpr bool kTakesTable = requires(const Kind& kind, const TomlValue& value, std::optional<size_t>& at) {
  kind.from_table(value, at);
};

}  // namespace tnk::config
