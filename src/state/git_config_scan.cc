#include "state/git_config_scan.h"

#include <algorithm>
#include <cctype>

namespace tnk::state {
namespace {

// Keys whose values are data to git: repository format, checkout and index settings, remotes and
// branches (a remote's URL is fetched from, never run: git refuses ext:: by default), identities.
// A "*" stands for a subsection (remote.origin.url). git lower-cases section and key names.
constexpr std::string_view kDataKeys[] = {
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.safecrlf",
    "core.eol",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "core.untrackedcache",
    "core.splitindex",
    "core.checkstat",
    "core.trustctime",
    "core.quotepath",
    "core.compression",
    "core.loosecompression",
    "core.commitgraph",
    "core.multipackindex",
    "core.preloadindex",
    "core.abbrev",
    "core.protecthfs",
    "core.protectntfs",
    "extensions.objectformat",
    "extensions.worktreeconfig",
    "extensions.refstorage",
    "extensions.preciousobjects",
    "remote.*.url",
    "remote.*.pushurl",
    "remote.*.fetch",
    "remote.*.push",
    "remote.*.tagopt",
    "remote.*.prune",
    "remote.*.mirror",
    "remote.*.skipdefaultupdate",
    "branch.*.remote",
    "branch.*.merge",
    "branch.*.rebase",
    "branch.*.pushremote",
    "branch.*.description",
    "submodule.*.url",
    "submodule.*.active",
    "user.name",
    "user.email",
    "init.defaultbranch",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "fetch.prune",
    "gc.auto",
    "index.version",
    "feature.manyfiles",
    "lfs.repositoryformatversion",
};

// "remote.origin.url" matches "remote.*.url": the subsection is whatever lies between the first and
// the last dot (it may hold dots itself).
bool is_data_key(const std::string& key) {
  // A loop rather than find(): GCC 12 at -O2 takes find's bound for an overread here (a false positive).
  size_t first = std::string::npos, last = std::string::npos;
  for (size_t i = 0; i < key.size(); ++i) {
    if (key[i] != '.') continue;
    if (first == std::string::npos) first = i;
    last = i;
  }
  if (first == std::string::npos) return false;
  for (std::string_view entry : kDataKeys) {
    const std::string known(entry);
    if (key == known) return true;
    const size_t star = known.find(".*.");
    if (star == std::string::npos || first == last) continue;
    if (key.compare(0, first, known, 0, star) == 0 && key.compare(last, std::string::npos, known, star + 2) == 0) {
      return true;
    }
  }
  return false;
}

std::string lowered(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::vector<std::string> split_z(std::string_view text) {
  std::vector<std::string> parts;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\0', pos);
    if (end == std::string_view::npos) end = text.size();
    if (end > pos) parts.emplace_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return parts;
}

std::vector<std::string> runnable_entries(std::string_view list_z, const WorktreeCheck& worktree_inside) {
  std::vector<std::string> found;
  for (const std::string& whole : split_z(list_z)) {
    const std::string_view record = whole;
    const size_t nl = record.find('\n');
    const std::string_view key = record.substr(0, nl);
    const std::string value = nl == std::string_view::npos ? "" : std::string(record.substr(nl + 1));
    // Only the section and the key are case-insensitive; a subsection keeps its case, and the
    // allow-list's subsections are all "*".
    const std::string key_l = lowered(key);
    if (key_l == "core.worktree" ? worktree_inside(value) : is_data_key(key_l)) continue;
    found.push_back(std::string(key) + (nl == std::string_view::npos ? "" : "=" + value));
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

}  // namespace tnk::state
