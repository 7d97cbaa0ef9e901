// The one table of tnk.toml keys: for each, its name, its TNK_* variable, what a valid value looks like,
// the Config member it sets, how its value is read (from the file and from the variable) and shown, and
// its lines in `tnk init`'s template. The file reader, the env overrides, `config show`, the template and
// the manual page all read it, so a new key is a row of keys.cc (and its member in Config).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "config/config.h"

namespace tnk::config {

// A tnk.toml value as the file reader hands it to a key, so that toml++ stays in config_file.cc.
using TomlScalar = std::variant<std::monostate, std::string_view, int64_t, bool>;  // monostate: any other type
struct TomlValue {
  TomlScalar scalar;                                                          // when the value is not a table
  std::optional<std::vector<std::pair<std::string_view, TomlScalar>>> table;  // a table: its entries, in file order
};

// A key's answer to a value of the file: taken, or refused as a whole or for one entry of a table.
struct FileVerdict {
  bool taken = true;
  std::optional<size_t> entry;  // the refused entry of a table value
};

// A key's line of `config show`.
struct ShownValue {
  std::string text;      // the text column: "<none>" when unset, paths expanded
  nlohmann::json value;  // "value" of the JSON: null when unset, sizes in bytes, paths as written
  std::string path;      // the expanded path of a path key, else empty
  Source source = Source::kDefault;
  int line = 0;
};

// Where the template (config_template.cc) writes a key: not at all, as the original's setting, as the
// original's commented-out example (it has no default), or as one of tnk's own, commented out.
enum class Sample { kAbsent, kOriginal, kOriginalCommented, kCommented };

struct Key {
  std::string_view name = {};    // as written in tnk.toml; "sandbox.cpus" is `cpus` in `[sandbox]`
  std::string_view env = {};     // the overriding variable, or empty
  std::string_view expect = {};  // completes "key 'K' must be ..."
  Sample sample = Sample::kAbsent;
  std::string_view sample_value = {};  // written after "cpus = "; a table key: the lines under its header
  std::string_view comment = {};       // the template's lines above the key, without "# "; empty: none
  bool is_table = false;               // its value is a table: `[inference.aliases]`

  // Filled in by keys.cc from the member and the kind of value; `line` is the key's line in the file.
  std::function<FileVerdict(const TomlValue&, int line, Config&, const std::filesystem::path& home)> from_file = {};
  // False when the variable's text is not a valid value.
  std::function<bool(std::string_view text, Config&, const std::filesystem::path& home)> from_env = {};
  std::function<ShownValue(const Config&)> show = {};
  // Path keys only: sets the expanded path from the text.
  std::function<void(Config&, const std::filesystem::path& home)> expand = {};
};

// Every key, in the order `config show` lists them.
const std::vector<Key>& keys();
const Key* find_key(std::string_view name);

// True for "sandbox" and "inference": tables whose entries are keys of their own ("sandbox.cpus").
bool is_key_table(std::string_view name);

}  // namespace tnk::config
