#include "review/patch.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdio>

#include "core/terminal_text.h"
#include "review/git_blob.h"
#include "review/line_diff.h"
#include "review/tree.h"

namespace tnk::review {
namespace {

// One side of a file's diff: what the project has (a) or what the layer has (b).
struct Side {
  bool present = false;
  uint32_t mode = 0;  // git's: 100644, 100755 or 120000
  std::string content;
  bool too_big = false;
};

bool in_patch(EntryType type) { return type == EntryType::kFile || type == EntryType::kSymlink; }

// git records a file's executable bit (the owner's) and nothing else of its mode.
uint32_t git_mode(EntryType type, uint32_t perm) {
  if (type == EntryType::kSymlink) return 0120000;
  return (perm & 0100) != 0 ? 0100755 : 0100644;
}

std::string octal(uint32_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%06o", mode);
  return buf;
}

Result<Side> read_side(int top, const std::string& rel, EntryType type, uint32_t perm, const std::string& what) {
  Side side;
  side.present = true;
  side.mode = git_mode(type, perm);
  if (type == EntryType::kSymlink) {
    TNK_ASSIGN_OR_RETURN(side.content, read_link_below(top, rel, what));
    return side;
  }
  struct stat st {};
  TNK_ASSIGN_OR_RETURN(bool exists, stat_below(top, rel, &st));
  if (!exists) return failed(rel + " is gone from " + what, "run the command again");
  if (static_cast<uint64_t>(st.st_size) > kMaxPatchedFile) {
    side.too_big = true;
    return side;
  }
  TNK_ASSIGN_OR_RETURN(side.content, read_file_below(top, rel, what, kMaxPatchedFile));
  return side;
}

class PatchWriter {
 public:
  PatchWriter(int upper, int project) : upper_(upper), project_(project) {}

  Status change(const Change& c) {
    if (c.kind == ChangeKind::kMode) {  // the same bytes (a directory's mode is not in a patch)
      if (c.type != EntryType::kFile) return ok_status();
      section(c.path, Side{true, git_mode(c.old_type, c.old_mode), {}, false},
              Side{true, git_mode(c.type, c.new_mode), {}, false});
      return ok_status();
    }
    if (c.old_type == c.type) {
      if (!in_patch(c.type)) return ok_status();
      TNK_ASSIGN_OR_RETURN(Side a, read_side(project_, c.path, c.old_type, c.old_mode, "the project"));
      TNK_ASSIGN_OR_RETURN(Side b, read_side(upper_, c.path, c.type, c.new_mode, "the layer"));
      section(c.path, a, b);
      return ok_status();
    }
    // A type change is a deletion and an addition, as git shows it.
    if (c.old_type == EntryType::kDir) {
      TNK_RETURN_IF_ERROR(delete_tree(c.path));
    } else if (in_patch(c.old_type)) {
      TNK_ASSIGN_OR_RETURN(Side a, read_side(project_, c.path, c.old_type, c.old_mode, "the project"));
      section(c.path, a, Side{});
    }
    if (in_patch(c.type)) {
      TNK_ASSIGN_OR_RETURN(Side b, read_side(upper_, c.path, c.type, c.new_mode, "the layer"));
      section(c.path, Side{}, b);
    }
    return ok_status();
  }

  std::vector<PatchLine> take() { return std::move(lines_); }

 private:
  // Every file and link below the project's directory `rel`, deleted.
  Status delete_tree(const std::string& rel) {
    TNK_ASSIGN_OR_RETURN(UniqueFd dir, open_dir_below(project_, rel));
    TNK_ASSIGN_OR_RETURN(auto names, list_dir(dir.get(), rel));
    for (const auto& name : names) {
      std::string path = join_rel(rel, name);
      struct stat st {};
      if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        return sys_error(errno, "checking " + path);
      if (S_ISDIR(st.st_mode)) {
        TNK_RETURN_IF_ERROR(delete_tree(path));
      } else if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
        EntryType type = S_ISLNK(st.st_mode) ? EntryType::kSymlink : EntryType::kFile;
        TNK_ASSIGN_OR_RETURN(Side a, read_side(project_, path, type, st.st_mode & 07777, "the project"));
        section(path, a, Side{});
      }
    }
    return ok_status();
  }

  void add(PatchLineKind kind, std::string text) { lines_.push_back({kind, std::move(text)}); }

  void section(const std::string& path, const Side& a, const Side& b) {
    bool both = a.present && b.present;
    bool same_bytes = both && !a.too_big && !b.too_big && a.content == b.content;
    if (both && a.mode == b.mode && same_bytes) return;
    const std::string name_a = quoted_path("a/" + path), name_b = quoted_path("b/" + path);
    const std::string from = a.present ? name_a : "/dev/null", to = b.present ? name_b : "/dev/null";
    add(PatchLineKind::kHeader, "diff --git " + name_a + " " + name_b);
    if (!a.present) {
      add(PatchLineKind::kHeader, "new file mode " + octal(b.mode));
    } else if (!b.present) {
      add(PatchLineKind::kHeader, "deleted file mode " + octal(a.mode));
    } else if (a.mode != b.mode) {
      add(PatchLineKind::kHeader, "old mode " + octal(a.mode));
      add(PatchLineKind::kHeader, "new mode " + octal(b.mode));
    }
    if (same_bytes) return;
    if (a.too_big || b.too_big) {
      add(PatchLineKind::kHeader, "Binary files " + from + " and " + to + " differ");
      return;
    }
    // Full object ids: git apply wants them for a binary patch, and checks them.
    const std::string none(40, '0');
    std::string index =
        "index " + (a.present ? git_blob_id(a.content) : none) + ".." + (b.present ? git_blob_id(b.content) : none);
    if (both && a.mode == b.mode) index += " " + octal(a.mode);
    add(PatchLineKind::kHeader, index);
    if (looks_binary(a.content) || looks_binary(b.content)) {
      add(PatchLineKind::kHeader, "GIT binary patch");
      const std::string literal = git_binary_literal(b.content);
      for (auto line : split_lines(literal)) {
        line.remove_suffix(1);
        add(PatchLineKind::kPlain, std::string(line));
      }
      return;
    }
    auto hunks = unified_hunks(split_lines(a.content), split_lines(b.content));
    if (hunks.empty()) return;  // an empty file made or removed: the header says it all
    add(PatchLineKind::kHeader, "--- " + from);
    add(PatchLineKind::kHeader, "+++ " + to);
    for (const auto& hunk : hunks) {
      add(PatchLineKind::kHunk, hunk_header(hunk));
      for (const auto& line : hunk.lines) {
        bool ends = !line.text.empty() && line.text.back() == '\n';
        std::string_view body = ends ? line.text.substr(0, line.text.size() - 1) : line.text;
        PatchLineKind kind = line.op == '+'   ? PatchLineKind::kAdded
                             : line.op == '-' ? PatchLineKind::kRemoved
                                              : PatchLineKind::kContext;
        add(kind, line.op + std::string(body));
        if (!ends) add(PatchLineKind::kPlain, "\\ No newline at end of file");
      }
    }
  }

  int upper_, project_;
  std::vector<PatchLine> lines_;
};

}  // namespace

Result<std::vector<PatchLine>> patch_of(int upper_fd, int project_fd, const std::vector<Change>& changes) {
  PatchWriter writer(upper_fd, project_fd);
  for (const auto& c : changes) TNK_RETURN_IF_ERROR(writer.change(c));
  return writer.take();
}

}  // namespace tnk::review
