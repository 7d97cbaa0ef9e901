#include "specs/revision.h"

#include <algorithm>
#include <chrono>
#include <system_error>
#include <vector>

#include "audit/sha256.h"
#include "core/file_memo.h"
#include "core/files.h"
#include "core/host_git.h"
#include "core/subprocess.h"
#include "specs/profiles.h"

namespace tnk::specs {
namespace fs = std::filesystem;
namespace {

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// Relative paths of the regular files below `root`, sorted; `.git` and symlinks skipped.
std::vector<fs::path> regular_files(const fs::path& root) {
  std::vector<fs::path> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->path().filename() == ".git") {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_symlink(type_ec) || !it->is_regular_file(type_ec)) continue;
    files.push_back(it->path().lexically_relative(root));
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

Result<std::string> git_revision(const fs::path& dir) {
  TNK_ASSIGN_OR_RETURN(ProcessResult r,
                       run_host_git(dir, {"rev-parse", "--short=7", "HEAD"}, std::chrono::seconds(10)));
  std::string out = trim(r.out);
  if (r.exit_code != 0 || out.size() < 7 || !is_hex(out)) {
    return failed("cannot read the git revision of " + dir.string() + ": " + trim(r.err));
  }
  return "git:" + out.substr(0, 7);
}

std::string specs_tree_hash(const fs::path& config_dir) { return directory_hash(config_dir / kSandboxDir); }

std::string directory_hash(const fs::path& root) {
  std::string listing;
  for (const fs::path& rel : regular_files(root)) {
    Result<std::string> content = read_file(root / rel);
    // An unreadable file still counts, so that making it readable again changes the hash.
    std::string digest = content ? audit::sha256_hex(*content) : "unreadable";
    listing += digest + "  " + rel.generic_string() + "\n";
  }
  return audit::sha256_hex(listing);
}

std::string specs_revision(const fs::path& config_dir, const fs::path& memo_dir) {
  std::error_code ec;
  const fs::path rev_file = config_dir / kSpecsRevFile;
  if (fs::exists(rev_file, ec)) {
    Result<std::string> recorded = read_file(rev_file);
    std::string rev = recorded ? trim(*recorded) : std::string();
    if (rev.size() == 11 && rev.starts_with("git:") && is_hex(rev.substr(4))) return rev;
  } else if (fs::exists(config_dir / ".git", ec)) {
    if (Result<std::string> rev = git_revision(config_dir)) return *rev;
  }
  if (memo_dir.empty()) return "sha256:" + specs_tree_hash(config_dir).substr(0, 12);
  const fs::path root = config_dir / kSandboxDir;
  std::vector<fs::path> inputs;
  for (const fs::path& rel : regular_files(root)) inputs.push_back(root / rel);  // their names are in the key
  auto hash = memoized(memo_dir / "specs-tree-hash.json", inputs,
                       [&]() -> Result<std::string> { return specs_tree_hash(config_dir); });
  return "sha256:" + (hash ? *hash : specs_tree_hash(config_dir)).substr(0, 12);
}

}  // namespace tnk::specs
