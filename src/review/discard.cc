#include "review/discard.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "review/diff.h"
#include "review/tree.h"

namespace tnk::review {
namespace {

// The nearest directory above `rel` that the layer has as opaque, or "" when none is.
Result<std::string> opaque_above(int upper_fd, const std::string& rel) {
  for (std::string at = split_rel(rel).first; !at.empty(); at = split_rel(at).first) {
    Result<UniqueFd> dir = open_dir_below(upper_fd, at);
    if (!dir) continue;  // not in the layer (or not a directory there): nothing opaque here
    char value[4] = {};
    if (::fgetxattr(dir->get(), kOpaqueXattr, value, sizeof value) == 1 && value[0] == 'y') return at;
  }
  return std::string();
}

}  // namespace

Status check_droppable(int upper_fd, const std::vector<std::string>& paths) {
  for (const auto& rel : paths) {
    TNK_ASSIGN_OR_RETURN(std::string opaque, opaque_above(upper_fd, rel));
    if (!opaque.empty()) {
      return failed("cannot discard " + rel + " alone: the sandbox replaced its directory " + opaque +
                        " whole, and dropping part of it would hide the project's files there",
                    "discard the directory: `tnk sandbox discard " + opaque + "`");
    }
  }
  return ok_status();
}

Status drop_paths(int upper_fd, const std::vector<std::string>& paths) {
  for (const auto& rel : paths) {
    auto [parent, name] = split_rel(rel);
    Result<UniqueFd> dir = open_dir_below(upper_fd, parent);
    if (!dir) continue;  // the layer has nothing there
    TNK_RETURN_IF_ERROR(remove_tree(dir->get(), name, rel));
  }
  return ok_status();
}

Status restamp_paths(int project_fd, const std::vector<std::string>& paths, Baseline& baseline) {
  for (const auto& rel : paths) {
    const std::string prefix = rel + "/";
    for (auto it = baseline.lower_bound(prefix); it != baseline.end() && it->first.starts_with(prefix);) {
      it = baseline.erase(it);
    }
    baseline.erase(rel);
    TNK_ASSIGN_OR_RETURN(std::optional<Stamp> now, stamp_now(project_fd, rel));
    if (!now) continue;
    baseline[rel] = *now;
    if (S_ISDIR(now->mode)) {
      TNK_ASSIGN_OR_RETURN(UniqueFd dir, open_dir_below(project_fd, rel));
      TNK_RETURN_IF_ERROR(stamp_below(dir.get(), rel, baseline));
    }
  }
  return ok_status();
}

}  // namespace tnk::review
