#include "core/file_memo.h"

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "core/files.h"

namespace tnk {
namespace {

namespace fs = std::filesystem;

std::string nanoseconds(const timespec& t) { return std::to_string(t.tv_sec) + "." + std::to_string(t.tv_nsec); }

// The identity of `inputs` as one string; empty when one of them cannot be stat'ed.
std::string identity_of(const std::vector<fs::path>& inputs) {
  std::string key;
  for (const auto& input : inputs) {
    struct stat st {};
    if (::stat(input.c_str(), &st) != 0) return "";
    key += input.string() + " " + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + " " +
           std::to_string(st.st_size) + " " + nanoseconds(st.st_mtim) + " " + nanoseconds(st.st_ctim) + "\n";
  }
  return key;
}

}  // namespace

Result<std::string> memoized(const fs::path& memo_file, const std::vector<fs::path>& inputs,
                             const std::function<Result<std::string>()>& compute) {
  const std::string key = identity_of(inputs);
  if (key.empty()) return compute();
  if (auto text = read_file(memo_file)) {
    auto doc = nlohmann::json::parse(*text, nullptr, false);
    if (doc.is_object() && doc.value("key", "") == key && doc.contains("value") && doc["value"].is_string()) {
      return doc["value"].get<std::string>();
    }
  }
  TNK_ASSIGN_OR_RETURN(std::string value, compute());
  // The key is taken again: a file changed while the value was computed must not be remembered with it.
  if (identity_of(inputs) == key && make_dirs(memo_file.parent_path()).ok()) {
    (void)write_file_atomic(memo_file, nlohmann::json{{"key", key}, {"value", value}}.dump() + "\n");
  }
  return value;
}

}  // namespace tnk
