#include "review/apply.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <optional>
#include <set>

#include "audit/sha256.h"
#include "core/files.h"
#include "review/tree.h"

namespace tnk::review {
namespace {

// Permission bits apply writes: never setuid or setgid (the sticky bit is harmless).
mode_t safe_mode(uint32_t mode) { return static_cast<mode_t>(mode & 01777); }

std::string conflict_reason(const std::optional<Stamp>& before, const std::optional<Stamp>& now) {
  if (!before && now) return "created on the host since the layer was made";
  if (before && !now) return "removed on the host since the layer was made";
  if (before && now && !unchanged(*before, *now)) return "changed on the host since the layer was made";
  return {};
}

std::optional<Stamp> recorded(const Baseline& baseline, const std::string& rel) {
  auto it = baseline.find(rel);
  if (it == baseline.end()) return std::nullopt;
  return it->second;
}

// A directory the change replaces or removes must be as it was all the way down.
Result<std::string> subtree_reason(int project_fd, const Baseline& baseline, const std::string& rel) {
  Result<UniqueFd> dir = open_dir_below(project_fd, rel);
  if (!dir) return std::string();  // not a directory now: the top's own check says so
  Baseline now;
  TNK_RETURN_IF_ERROR(stamp_below(dir->get(), rel, now));
  const std::string prefix = rel + "/";
  for (auto it = baseline.lower_bound(prefix); it != baseline.end() && it->first.starts_with(prefix); ++it) {
    auto found = now.find(it->first);
    std::string why = conflict_reason(it->second, found == now.end() ? std::nullopt : std::optional(found->second));
    if (!why.empty()) return it->first + " " + why;
    now.erase(it->first);
  }
  if (!now.empty()) return now.begin()->first + " " + conflict_reason(std::nullopt, now.begin()->second);
  return std::string();
}

class Applier {
 public:
  Applier(int upper, int project, Baseline& baseline, LayerAfter after)
      : upper_(upper), project_(project), baseline_(baseline), keep_layer_(after == LayerAfter::kKept) {
    struct stat st {};
    if (::geteuid() == 0 && ::fstat(project, &st) == 0) owner_ = {st.st_uid, st.st_gid};
  }

  Status apply(const Change& c) {
    auto [parent, name] = split_rel(c.path);
    if (c.kind == ChangeKind::kDeleted) return remove(c, parent, name);
    TNK_ASSIGN_OR_RETURN(UniqueFd dir, parent_in_project(parent));
    Touched t{c.path, c.kind, c.type, {}};
    if (c.kind == ChangeKind::kMode) {
      if (::fchmodat(dir.get(), name.c_str(), safe_mode(c.new_mode), AT_SYMLINK_NOFOLLOW) != 0) {
        return sys_error(errno, "changing the mode of " + c.path);
      }
      if (c.type == EntryType::kFile) {
        TNK_ASSIGN_OR_RETURN(t.sha256, hash_of(read_file_below(upper_, c.path, "the layer")));
      }
    } else if (c.type == EntryType::kDir) {
      TNK_RETURN_IF_ERROR(replace_non_dir(dir.get(), name, c));
      if (::mkdirat(dir.get(), name.c_str(), safe_mode(c.new_mode)) != 0 && errno != EEXIST) {
        return sys_error(errno, "creating the directory " + c.path);
      }
      if (::fchmodat(dir.get(), name.c_str(), safe_mode(c.new_mode), AT_SYMLINK_NOFOLLOW) != 0 ||
          (owner_ && ::fchownat(dir.get(), name.c_str(), owner_->first, owner_->second, AT_SYMLINK_NOFOLLOW) != 0)) {
        return sys_error(errno, "setting up the directory " + c.path);
      }
    } else {
      TNK_ASSIGN_OR_RETURN(t.sha256, write_entry(dir.get(), name, c));
    }
    TNK_RETURN_IF_ERROR(take_out_of_layer(c, parent, name));
    done_.push_back(std::move(t));
    return restamp(dir.get(), parent, c.path);
  }

  // Empty layer directories left by the applied changes go, so the project's own show through again.
  void prune() {
    if (keep_layer_) return;
    std::vector<std::string> dirs(touched_dirs_.begin(), touched_dirs_.end());
    std::sort(dirs.rbegin(), dirs.rend());  // children before their parents
    for (const auto& rel : dirs) {
      if (rel.empty() || under_opaque(rel)) continue;
      auto [parent, name] = split_rel(rel);
      Result<UniqueFd> dir = open_dir_below(upper_, parent);
      if (dir) (void)::unlinkat(dir->get(), name.c_str(), AT_REMOVEDIR);  // fails unless empty: fine
    }
  }

  std::vector<Touched> take() { return std::move(done_); }

 private:
  Result<UniqueFd> parent_in_project(const std::string& parent) {
    // Missing parents (a new file whose new directory was not selected) are made as the layer has them.
    std::string at;
    size_t start = 0;
    while (start < parent.size()) {
      size_t end = parent.find('/', start);
      if (end == std::string::npos) end = parent.size();
      std::string rel = parent.substr(0, end);
      start = end + 1;
      struct stat st {};
      TNK_ASSIGN_OR_RETURN(bool exists, stat_below(project_, rel, &st));
      if (exists) continue;
      struct stat up {};
      TNK_ASSIGN_OR_RETURN(bool in_layer, stat_below(upper_, rel, &up));
      Change made{rel,  ChangeKind::kAdded, EntryType::kDir, EntryType::kNone, 0, in_layer ? up.st_mode : 0755, {},
                  false};
      TNK_RETURN_IF_ERROR(apply(made));
    }
    return open_dir_below(project_, parent);
  }

  Status replace_non_dir(int dir, const std::string& name, const Change& c) {
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
      if (::unlinkat(dir, name.c_str(), 0) != 0) return sys_error(errno, "replacing " + c.path);
    }
    return ok_status();
  }

  // A file or link, made under a temporary name and renamed over the target. Returns its hash.
  Result<std::string> write_entry(int dir, const std::string& name, const Change& c) {
    const std::string temp = ".tnk-apply." + std::to_string(::getpid()) + "." + name.substr(0, 180);
    std::string content;
    if (c.type == EntryType::kSymlink) {
      TNK_ASSIGN_OR_RETURN(content, read_link_below(upper_, c.path, "the layer"));
      if (::symlinkat(content.c_str(), dir, temp.c_str()) != 0) return sys_error(errno, "writing " + c.path);
    } else if (c.type == EntryType::kFile) {
      TNK_ASSIGN_OR_RETURN(content, read_file_below(upper_, c.path, "the layer"));
      UniqueFd out(::openat(dir, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
      if (!out.valid()) return sys_error(errno, "writing " + c.path);
      Status wrote = write_all(out.get(), content, c.path);
      if (wrote && ::fchmod(out.get(), safe_mode(c.new_mode)) != 0) wrote = sys_error(errno, "chmod " + c.path);
      if (wrote && owner_ && ::fchown(out.get(), owner_->first, owner_->second) != 0) {
        wrote = sys_error(errno, "chown " + c.path);
      }
      if (!wrote) {
        ::unlinkat(dir, temp.c_str(), 0);
        return wrote.error();
      }
    } else {
      return failed(c.path + " is a " + to_string(c.type) + ": apply writes files, directories and links only");
    }
    if (owner_ && c.type == EntryType::kSymlink) {
      (void)::fchownat(dir, temp.c_str(), owner_->first, owner_->second, AT_SYMLINK_NOFOLLOW);
    }
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
      TNK_RETURN_IF_ERROR(remove_tree(dir, name, c.path));
    }
    if (::renameat(dir, temp.c_str(), dir, name.c_str()) != 0) {
      int err = errno;
      ::unlinkat(dir, temp.c_str(), 0);
      return sys_error(err, "renaming the new " + c.path + " into place");
    }
    return audit::sha256_hex(content);
  }

  Status remove(const Change& c, const std::string& parent, const std::string& name) {
    Touched t{c.path, c.kind, c.old_type, {}};
    Result<UniqueFd> dir = open_dir_below(project_, parent);
    if (dir) {
      if (c.old_type == EntryType::kFile) {
        TNK_ASSIGN_OR_RETURN(t.sha256, hash_of(read_file_below(project_, c.path, "the project")));
      }
      TNK_RETURN_IF_ERROR(remove_tree(dir->get(), name, c.path));
    }
    Result<UniqueFd> up = open_dir_below(upper_, parent);
    struct stat st {};
    if (!keep_layer_ && up && ::fstatat(up->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0) && ::unlinkat(up->get(), name.c_str(), 0) != 0) {
      return sys_error(errno, "removing the whiteout of " + c.path + " from the layer");
    }
    const std::string prefix = c.path + "/";
    for (auto it = baseline_.lower_bound(prefix); it != baseline_.end() && it->first.starts_with(prefix);) {
      it = baseline_.erase(it);
    }
    baseline_.erase(c.path);
    touched_dirs_.insert(parent);
    done_.push_back(std::move(t));
    if (dir) return restamp(dir->get(), parent, "");
    return ok_status();
  }

  // The layer's copy goes (the project has the same now), but below an opaque directory, which would
  // then hide the project's copy: there it stays.
  Status take_out_of_layer(const Change& c, const std::string& parent, const std::string& name) {
    if (keep_layer_) return ok_status();
    touched_dirs_.insert(parent);
    if (c.type == EntryType::kDir) {
      touched_dirs_.insert(c.path);
      return ok_status();
    }
    if (under_opaque(parent)) return ok_status();
    Result<UniqueFd> up = open_dir_below(upper_, parent);
    if (up && ::unlinkat(up->get(), name.c_str(), 0) != 0 && errno != ENOENT) {
      return sys_error(errno, "removing " + c.path + " from the layer");
    }
    return ok_status();
  }

  bool under_opaque(const std::string& rel) {
    for (std::string at = rel; !at.empty(); at = split_rel(at).first) {
      auto cached = opaque_.find(at);
      if (cached == opaque_.end()) {
        Result<UniqueFd> dir = open_dir_below(upper_, at);
        char value[4] = {};
        bool opaque = dir && ::fgetxattr(dir->get(), kOpaqueXattr, value, sizeof value) == 1 && value[0] == 'y';
        cached = opaque_.emplace(at, opaque).first;
      }
      if (cached->second) return true;
    }
    return false;
  }

  Status restamp(int dir, const std::string& parent, const std::string& rel) {
    struct stat st {};
    if (!rel.empty()) {
      if (::fstatat(dir, split_rel(rel).second.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        return sys_error(errno, "checking the new " + rel);
      }
      baseline_[rel] = stamp_of(st);
    }
    if (::fstat(dir, &st) == 0) baseline_[parent] = stamp_of(st);
    return ok_status();
  }

  static Result<std::string> hash_of(Result<std::string> content) {
    if (!content) return content.error();
    return audit::sha256_hex(*content);
  }

  int upper_, project_;
  Baseline& baseline_;
  bool keep_layer_;                               // the overlay is mounted: its layer is left alone
  std::optional<std::pair<uid_t, gid_t>> owner_;  // run as root: new entries belong to the project's owner
  std::vector<Touched> done_;
  std::set<std::string> touched_dirs_;
  std::map<std::string, bool> opaque_;
};

}  // namespace

Result<std::vector<std::string>> conflicts(int project_fd, const Baseline& baseline,
                                           const std::vector<Change>& changes) {
  std::vector<std::string> out;
  std::set<std::string> parents_seen;
  for (const auto& c : changes) {
    if (c.kind != ChangeKind::kDeleted && c.type == EntryType::kOther) {
      out.push_back(c.path + ": a device, fifo or socket, which apply never writes");
      continue;
    }
    // The directories on the way too: one the host replaced (by a link, say) is refused here, by name.
    std::string why;
    for (std::string at = split_rel(c.path).first; !at.empty() && why.empty(); at = split_rel(at).first) {
      if (!parents_seen.insert(at).second) break;
      TNK_ASSIGN_OR_RETURN(std::optional<Stamp> parent_now, stamp_now(project_fd, at));
      why = conflict_reason(recorded(baseline, at), parent_now);
      if (!why.empty()) why = "its directory " + at + " " + why;
    }
    TNK_ASSIGN_OR_RETURN(std::optional<Stamp> now, stamp_now(project_fd, c.path));
    if (why.empty()) why = conflict_reason(recorded(baseline, c.path), now);
    bool replaces_dir = c.old_type == EntryType::kDir && c.type != EntryType::kDir;
    if (why.empty() && replaces_dir) {
      TNK_ASSIGN_OR_RETURN(why, subtree_reason(project_fd, baseline, c.path));
      if (!why.empty()) why = "below it, " + why;
    }
    if (!why.empty()) out.push_back(c.path + ": " + why);
  }
  return out;
}

Result<std::vector<Touched>> apply_changes(int upper_fd, int project_fd, const std::vector<Change>& changes,
                                           Baseline& baseline, LayerAfter after) {
  // Deletions first, deepest first, so a path a deletion frees can take its replacement; then the rest,
  // parents before children.
  std::vector<Change> ordered = changes;
  std::stable_sort(ordered.begin(), ordered.end(), [](const Change& a, const Change& b) {
    bool a_del = a.kind == ChangeKind::kDeleted, b_del = b.kind == ChangeKind::kDeleted;
    if (a_del != b_del) return a_del;
    return a_del ? a.path > b.path : a.path < b.path;
  });
  Applier applier(upper_fd, project_fd, baseline, after);
  for (const auto& c : ordered) {
    struct stat st {};
    // A directory made on the way for an earlier change is there already.
    if (c.kind == ChangeKind::kAdded && c.type == EntryType::kDir) {
      TNK_ASSIGN_OR_RETURN(bool exists, stat_below(project_fd, c.path, &st));
      if (exists && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == safe_mode(c.new_mode)) continue;
    }
    TNK_RETURN_IF_ERROR(applier.apply(c));
  }
  applier.prune();
  return applier.take();
}

Result<std::vector<Touched>> describe_layer(int upper_fd, const std::vector<Change>& changes) {
  std::vector<Touched> out;
  for (const auto& c : changes) {
    Touched t{c.path, c.kind, c.kind == ChangeKind::kDeleted ? c.old_type : c.type, {}};
    if (c.kind != ChangeKind::kDeleted && c.type == EntryType::kFile) {
      TNK_ASSIGN_OR_RETURN(std::string content, read_file_below(upper_fd, c.path, "the layer"));
      t.sha256 = audit::sha256_hex(content);
    } else if (c.kind != ChangeKind::kDeleted && c.type == EntryType::kSymlink) {
      TNK_ASSIGN_OR_RETURN(std::string target, read_link_below(upper_fd, c.path, "the layer"));
      t.sha256 = audit::sha256_hex(target);
    }
    out.push_back(std::move(t));
  }
  return out;
}

Status empty_dir(int dir, const std::string& what) {
  TNK_ASSIGN_OR_RETURN(auto names, list_dir(dir, what));
  for (const auto& name : names) TNK_RETURN_IF_ERROR(remove_tree(dir, name, what + "/" + name));
  return ok_status();
}

}  // namespace tnk::review
