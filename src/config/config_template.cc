#include "config/config_template.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <string_view>
#include <utility>
#include <vector>

#include "config/keys.h"
#include "core/files.h"

namespace tnk {
namespace {

constexpr std::string_view kOwnSettings =
    "# ---- tnk's own settings: remove the leading \"# \" to change one (the values shown are the defaults)\n";

// Each line of `text` after `mark` ("# " or nothing).
std::string lines(std::string_view mark, std::string_view text) {
  std::string out;
  for (size_t start = 0; start <= text.size();) {
    size_t end = std::min(text.find('\n', start), text.size());
    out += std::string(mark) + std::string(text.substr(start, end - start)) + "\n";
    start = end + 1;
  }
  return out;
}

// "sandbox" of "sandbox.cpus"; empty for a top-level key.
std::string_view table_of(std::string_view name) {
  size_t dot = name.rfind('.');
  return dot == std::string_view::npos ? std::string_view{} : name.substr(0, dot);
}

// The keys the template shows, in its order: the original's template first (its settings, then its
// commented-out preset, as it had them), then tnk's own; top-level keys before any [table], since in
// TOML a key under a [table] header belongs to that table.
std::vector<const config::Key*> sampled_keys() {
  std::vector<const config::Key*> sampled;
  for (const config::Key& key : config::keys()) {
    if (key.sample != config::Sample::kAbsent) sampled.push_back(&key);
  }
  std::stable_sort(sampled.begin(), sampled.end(), [](const config::Key* a, const config::Key* b) {
    auto rank = [](const config::Key* key) { return std::pair(key->sample, !table_of(key->name).empty()); };
    return rank(a) < rank(b);
  });
  return sampled;
}

}  // namespace

std::string config_template() {
  std::string out = "# tnk configuration\n";
  std::string_view table;  // the [table] of the lines so far
  bool own = false;        // past the original's keys
  for (const config::Key* key : sampled_keys()) {
    std::string_view mark = key->sample == config::Sample::kOriginal ? "" : "# ";
    if (!own && key->sample == config::Sample::kCommented) {
      own = true;
      out += "\n" + std::string(kOwnSettings);
    }
    if (!key->comment.empty()) out += "\n" + lines("# ", key->comment);
    if (key->is_table) {
      out += lines(mark, "[" + std::string(key->name) + "]") + lines(mark, key->sample_value);
      table = key->name;
      continue;
    }
    std::string_view name = key->name;
    if (table_of(name) != table) {
      table = table_of(name);
      out += lines(mark, "[" + std::string(table) + "]");
    }
    name.remove_prefix(table.empty() ? 0 : table.size() + 1);
    out += lines(mark, std::string(name) + " = " + std::string(key->sample_value));
  }
  return out;
}

Result<bool> write_config_template(const Paths& paths, bool force) {
  std::filesystem::path file = paths.config_file();
  struct stat st {};
  if (::lstat(file.c_str(), &st) == 0) {
    if (!force) return false;
  } else if (errno != ENOENT) {
    return sys_error(errno, "cannot check " + file.string());
  }
  TNK_RETURN_IF_ERROR(make_dirs(paths.config_dir, 0700));
  if (::chmod(paths.config_dir.c_str(), 0700) != 0) {
    return sys_error(errno, "cannot chmod " + paths.config_dir.string());
  }
  TNK_RETURN_IF_ERROR(write_file_atomic(file, config_template(), 0600));
  return true;
}

}  // namespace tnk
