#include "config/config_file.h"

// toml++ 3.3.0 (Debian 12) asserts in parse_key() on a control character after '[' (a bug of its
// own); under NDEBUG, as in a user's build, the same input is a clean parse error. Its asserts are off
// in every build, so that the tests and the fuzzer (tests/fuzz/config_toml_fuzz.cc) see what users get.
#define TOML_ASSERT(expr) ((void)0)
#include <toml++/toml.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "config/config_keys.h"
#include "config/config_values.h"
#include "config/routes_toml.h"

namespace tnk::config {
namespace {
namespace fs = std::filesystem;

// Sets one Config field from a TOML node; false when the node has the wrong type or value.
using NodeApply = std::function<bool(const toml::node&, int line, Config&, const fs::path& home)>;

template <class T, class Parse>
NodeApply node_key(Setting<T> Config::*member, Parse parse) {
  return [member, parse](const toml::node& node, int line, Config& config, const fs::path& home) {
    auto value = parse(node, home);
    if (!value) return false;
    config.*member = Setting<T>{T(std::move(*value)), Source::kFile, line};
    return true;
  };
}

// A TOML string checked by one of the text validators that the env overrides use too.
template <class TextParse>
auto string_node(TextParse text_parse) {
  return [text_parse](const toml::node& node, const fs::path&) -> decltype(text_parse(std::string_view{})) {
    if (const auto* text = node.as_string()) return text_parse(text->get());
    return std::nullopt;
  };
}

template <class U>
auto integer_node(int64_t min, int64_t max) {
  return [min, max](const toml::node& node, const fs::path&) -> std::optional<U> {
    const auto* number = node.as_integer();
    if (number == nullptr || number->get() < min || number->get() > max) return std::nullopt;
    return static_cast<U>(number->get());
  };
}

std::optional<std::string> absolute_dir_node(const toml::node& node, const fs::path& home) {
  if (const auto* text = node.as_string()) return parse_absolute_dir(text->get(), home);
  return std::nullopt;
}

std::optional<bool> bool_node(const toml::node& node, const fs::path&) {
  if (const auto* flag = node.as_boolean()) return flag->get();
  return std::nullopt;
}

// "2GiB" or a bare integer of GiB.
std::optional<uint64_t> size_node(const toml::node& node, const fs::path&) {
  if (const auto* text = node.as_string()) return parse_size_text(text->get());
  const auto* number = node.as_integer();
  constexpr int64_t kMaxGiB = std::numeric_limits<int64_t>::max() >> 30;
  if (number == nullptr || number->get() <= 0 || number->get() > kMaxGiB) return std::nullopt;
  return static_cast<uint64_t>(number->get()) * kGiB;
}

const std::map<std::string_view, NodeApply>& node_keys() {
  constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();
  static const std::map<std::string_view, NodeApply> keys = {
      {"server_port", node_key(&Config::server_port, integer_node<uint16_t>(1, 65535))},
      {"workspace_root", node_key(&Config::workspace_root, string_node(parse_path_text))},
      {"model_dir", node_key(&Config::model_dir, string_node(parse_path_text))},
      {"default_provision_profile", node_key(&Config::default_provision_profile, string_node(parse_profile_name))},
      {"default_engine_runtime", node_key(&Config::default_engine_runtime, string_node(parse_runtime_name))},
      {"default_engine_preset", node_key(&Config::default_engine_preset, string_node(parse_profile_name))},
      {"default_engine_bind_host", node_key(&Config::default_engine_bind_host, string_node(parse_bind_host))},
      {"default_backend", node_key(&Config::default_backend, string_node(parse_backend_name))},
      {"inference_url", node_key(&Config::inference_url, string_node(parse_inference_url))},
      {"model_name", node_key(&Config::model_name, string_node(parse_model_name))},
      {"context_window", node_key(&Config::context_window, integer_node<uint64_t>(1, kMaxInt))},
      {"default_network", node_key(&Config::default_network, string_node(parse_network))},
      {"allow_unlimited", node_key(&Config::allow_unlimited, bool_node)},
      {"sandbox.cpus", node_key(&Config::sandbox_cpus, integer_node<unsigned>(1, kMaxCpus))},
      {"sandbox.memory", node_key(&Config::sandbox_memory_bytes, size_node)},
      {"sandbox.disk", node_key(&Config::sandbox_disk_bytes, size_node)},
      {"audit", node_key(&Config::audit, bool_node)},
      {"audit_dir", node_key(&Config::audit_dir, absolute_dir_node)},
      {"inference.api_key_env", node_key(&Config::inference_api_key_env, string_node(parse_env_name))},
      {"inference.api_key_file", node_key(&Config::inference_api_key_file, string_node(parse_path_text))},
      {"inference.concurrency", node_key(&Config::inference_concurrency, integer_node<unsigned>(1, 64))},
      {"inference.request_limit", node_key(&Config::inference_request_limit, size_node)},
      {"inference.answer_limit", node_key(&Config::inference_answer_limit, size_node)},
  };
  return keys;
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

// The tables whose keys are listed one by one in node_keys() as "<table>.<key>".
constexpr std::string_view kKeyTables[] = {"sandbox", "inference"};

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

  // [inference.aliases]: each entry its own key, so that an error names the alias and its line.
  Status aliases(const toml::node& node, const std::string& name, int line) {
    const ConfigKeyInfo* info = find_config_key(name);
    const auto* entries = node.as_table();
    if (entries == nullptr) return value_error(config, node, name, info->expect);
    std::map<std::string, std::string> aliases;
    for (const auto& [key, value] : in_file_order(*entries)) {
      const auto* model = value->as_string();
      std::string alias(key->str());
      if (alias.empty() || model == nullptr || model->get().empty() || !parse_model_name(alias) ||
          !parse_model_name(model->get())) {
        return value_error(config, *value, name + "." + printable(alias), info->expect);
      }
      aliases[alias] = model->get();
    }
    config.inference_aliases = {std::move(aliases), Source::kFile, line};
    return ok_status();
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
      if (prefix.empty() && std::find(std::begin(kKeyTables), std::end(kKeyTables), name) != std::end(kKeyTables)) {
        const auto* inner = node.as_table();
        if (inner == nullptr) return value_error(config, node, name, "a table");
        TNK_RETURN_IF_ERROR(this->table(*inner, name + "."));
        continue;
      }
      if (name == "inference.aliases") {
        TNK_RETURN_IF_ERROR(aliases(node, name, line));
        continue;
      }
      auto it = node_keys().find(name);
      if (it == node_keys().end()) {
        log.warn(config.file.string() + ":" + std::to_string(line) + ": unknown key '" + name + "' (ignored)");
        continue;
      }
      if (!it->second(node, line, config, paths.home)) {
        const ConfigKeyInfo* info = find_config_key(name);
        return value_error(config, node, name, info != nullptr ? info->expect : "valid");
      }
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
