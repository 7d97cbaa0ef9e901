#include "config/config_file.h"

// toml++ 3.3.0 (Debian 12) asserts in parse_key() on a control character after '[' (a bug of its
// own); under NDEBUG, as in a user's build, the same input is a clean parse error. Its asserts are off
// in every build, so that the tests and the fuzzer (tests/fuzz/config_toml_fuzz.cc) see what users get.
#define TOML_ASSERT(expr) ((void)0)
#include <toml++/toml.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "config/config_values.h"
#include "config/keys.h"
#include "config/routes_toml.h"

namespace tnk::config {
namespace {

// A value as the key table takes it (config/keys.h); a table is std::monostate here.
TomlScalar scalar(const toml::node& node) {
  if (const auto* text = node.as_string()) return std::string_view(text->get());
  if (const auto* number = node.as_integer()) return number->get();
  if (const auto* flag = node.as_boolean()) return flag->get();
  return std::monostate{};
}

std::string position(const Config& config, const toml::source_position& at) {
  return config.file.string() + ":" + std::to_string(at.line) + ":" + std::to_string(at.column);
}

Error node_error(const Config& config, const toml::node& node, const std::string& what) {
  return failed(
      position(config, node.source().begin) + ": " + what,
      "edit the value in " + config.file.string() + " (`tnk config init --force` rewrites the file with the defaults)");
}

Error value_error(const Config& config, const toml::node& node, std::string_view key, std::string_view expect) {
  return node_error(config, node, "key '" + std::string(key) + "' must be " + std::string(expect));
}

// toml::table iterates in key order; warnings and the first error should follow the file.
std::vector<std::pair<const toml::key*, const toml::node*>> in_file_order(const toml::table& table) {
  std::vector<std::pair<const toml::key*, const toml::node*>> entries;
  for (auto&& [key, node] : table) entries.emplace_back(&key, &node);
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    const auto& x = a.first->source().begin;
    const auto& y = b.first->source().begin;
    return x.line != y.line ? x.line < y.line : x.column < y.column;
  });
  return entries;
}

// [inference] may name the key's variable or its file, not both: which one wins would be a guess.
Status check_one_api_key(const Config& config) {
  if (!config.inference_api_key_env.value || !config.inference_api_key_file.value) return ok_status();
  int line = std::max(config.inference_api_key_env.line, config.inference_api_key_file.line);
  return failed(config.file.string() + ":" + std::to_string(line) +
                    ": keys 'inference.api_key_env' and 'inference.api_key_file' are both set",
                "keep one of them in " + config.file.string() + ": the key comes from a variable or from a file");
}

struct Walk {
  Config& config;
  const Paths& paths;
  Log& log;

  // A known key's value, handed over as a TomlValue. A table value's entries keep their nodes, so that
  // an error names the entry at fault and its position ("inference.aliases.<name>").
  Status apply(const Key& known, const toml::node& node, int line) {
    TomlValue value;
    value.scalar = scalar(node);
    std::vector<std::pair<const toml::key*, const toml::node*>> entries;
    if (const auto* inner = node.as_table()) {
      entries = in_file_order(*inner);
      value.table.emplace();
      for (const auto& [name, entry] : entries) value.table->emplace_back(name->str(), scalar(*entry));
    }
    FileVerdict verdict = known.from_file(value, line, config, paths.home);
    if (verdict.taken) return ok_status();
    if (!verdict.entry) return value_error(config, node, known.name, known.expect);
    const auto& [name, entry] = entries.at(*verdict.entry);
    return value_error(config, *entry, std::string(known.name) + "." + printable(name->str()), known.expect);
  }

  Status table(const toml::table& table, const std::string& prefix) {
    for (const auto& [key, node_ptr] : in_file_order(table)) {
      const toml::node& node = *node_ptr;
      std::string name = prefix + std::string(key->str());
      auto line = static_cast<int>(key->source().begin.line);
      if (name == "routes" && prefix.empty()) {
        TNK_RETURN_IF_ERROR(apply_routes(
            node, config, paths.home,
            [this](const toml::node& at, const std::string& what) { return node_error(config, at, what); }));
        continue;
      }
      if (name == "ssh_routes" && prefix.empty()) {
        TNK_RETURN_IF_ERROR(apply_ssh_routes(node, config, [this](const toml::node& at, const std::string& what) {
          return node_error(config, at, what);
        }));
        continue;
      }
      if (prefix.empty() && is_key_table(name)) {
        const auto* inner = node.as_table();
        if (inner == nullptr) return value_error(config, node, name, "a table");
        TNK_RETURN_IF_ERROR(this->table(*inner, name + "."));
        continue;
      }
      const Key* known = find_key(name);
      if (known == nullptr) {
        log.warn(config.file.string() + ":" + std::to_string(line) + ": unknown key '" + name + "' (ignored)");
        continue;
      }
      TNK_RETURN_IF_ERROR(apply(*known, node, line));
    }
    return ok_status();
  }
};

Error syntax_error(const Config& config, const toml::parse_error& error) {
  return failed("cannot parse " + position(config, error.source().begin) + ": " + std::string(error.description()),
                "fix the TOML syntax in " + config.file.string() +
                    " (`tnk config init --force` rewrites the file with the defaults)");
}

}  // namespace

Status apply_config_file(std::string_view text, Config& config, const Paths& paths, Log& log) {
  toml::table root;
#if TOML_EXCEPTIONS
  try {
    root = toml::parse(text, config.file.string());
  } catch (const toml::parse_error& error) {
    return syntax_error(config, error);
  }
#else
  toml::parse_result parsed = toml::parse(text, config.file.string());
  if (!parsed) return syntax_error(config, parsed.error());
  root = std::move(parsed).table();
#endif
  TNK_RETURN_IF_ERROR((Walk{config, paths, log}.table(root, "")));
  return check_one_api_key(config);
}

}  // namespace tnk::config
