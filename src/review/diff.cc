#include "review/diff.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <set>

#include "review/host_run.h"
#include "review/tree.h"

namespace tnk::review {
namespace {

EntryType type_of(mode_t mode) {
  if (S_ISREG(mode)) return EntryType::kFile;
  if (S_ISDIR(mode)) return EntryType::kDir;
  if (S_ISLNK(mode)) return EntryType::kSymlink;
  return EntryType::kOther;
}

uint32_t perm(mode_t mode) { return static_cast<uint32_t>(mode & 07777); }

bool is_whiteout(const struct stat& st) { return S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0); }

bool is_opaque(int dir) {
  char value[4] = {};
  ssize_t n = ::fgetxattr(dir, kOpaqueXattr, value, sizeof value);
  return n == 1 && value[0] == 'y';
}

// Compares two regular files' bytes (same size already checked).
Result<bool> same_content(int upper_dir, int lower_dir, const std::string& name, const std::string& rel) {
  // O_NONBLOCK, then a regular file or nothing: a running sandbox may have put a FIFO there since the
  // walk looked, and opening that would hang the command (security review 3).
  UniqueFd a(::openat(upper_dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  UniqueFd b(::openat(lower_dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!a.valid() || !b.valid()) return sys_error(errno, "reading " + rel);
  struct stat sa {
  }, sb{};
  if (::fstat(a.get(), &sa) != 0 || ::fstat(b.get(), &sb) != 0 || !S_ISREG(sa.st_mode) || !S_ISREG(sb.st_mode)) {
    return failed("reading " + rel + ": it is no longer a regular file", "run the command again");
  }
  // On the heap, per call: as static thread_local arrays these 128 KiB were every thread's TLS, zeroed
  // at each tnk start and at each thread a supervisor starts (32 page faults on `tnk --version`).
  constexpr size_t kChunk = 65536;
  std::unique_ptr<char[]> buffers(new char[2 * kChunk]);
  char* buf_a = buffers.get();
  char* buf_b = buffers.get() + kChunk;
  for (;;) {
    ssize_t n = ::read(a.get(), buf_a, kChunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error(errno, "reading " + rel + " in the layer");
    size_t got = 0;
    while (got < static_cast<size_t>(n)) {
      ssize_t m = ::read(b.get(), buf_b + got, static_cast<size_t>(n) - got);
      if (m < 0 && errno == EINTR) continue;
      if (m < 0) return sys_error(errno, "reading " + rel + " in the project");
      if (m == 0) return false;
      got += static_cast<size_t>(m);
    }
    if (std::memcmp(buf_a, buf_b, got) != 0) return false;
    if (n == 0) return true;
  }
}

std::string link_target(int dir, const std::string& name) {
  char buf[4096];
  ssize_t n = ::readlinkat(dir, name.c_str(), buf, sizeof buf);
  return n < 0 ? std::string() : std::string(buf, static_cast<size_t>(n));
}

class Differ {
 public:
  explicit Differ(std::vector<Change>& out) : out_(out) {}

  // `lower` opens the project's directory at `rel`, or is -1 when the project has none there.
  Status walk(int upper, int lower, const std::string& rel) {
    TNK_ASSIGN_OR_RETURN(auto names, list_dir(upper, rel.empty() ? "the layer" : rel));
    if (lower >= 0 && !rel.empty() && is_opaque(upper)) {
      std::set<std::string> kept(names.begin(), names.end());
      TNK_ASSIGN_OR_RETURN(auto hidden, list_dir(lower, rel));
      for (const auto& name : hidden) {
        struct stat lst {};
        if (kept.count(name) == 0 && ::fstatat(lower, name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) == 0) {
          add(join_rel(rel, name), ChangeKind::kDeleted, nullptr, &lst);
        }
      }
    }
    for (const auto& name : names) TNK_RETURN_IF_ERROR(entry(upper, lower, rel, name));
    return ok_status();
  }

 private:
  Status entry(int upper, int lower, const std::string& dir, const std::string& name) {
    std::string rel = join_rel(dir, name);
    struct stat ust {
    }, lst{};
    if (::fstatat(upper, name.c_str(), &ust, AT_SYMLINK_NOFOLLOW) != 0) return sys_error(errno, "checking " + rel);
    bool in_lower = lower >= 0 && ::fstatat(lower, name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) == 0;
    if (is_whiteout(ust)) {
      if (in_lower) add(rel, ChangeKind::kDeleted, nullptr, &lst);
      return ok_status();
    }
    if (S_ISDIR(ust.st_mode)) {
      UniqueFd sub(::openat(upper, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub.valid()) return sys_error(errno, "opening " + rel + " in the layer");
      UniqueFd lower_sub;
      if (in_lower && S_ISDIR(lst.st_mode)) {
        lower_sub.reset(::openat(lower, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!lower_sub.valid()) return sys_error(errno, "opening " + rel + " in the project");
        if (perm(ust.st_mode) != perm(lst.st_mode)) add(rel, ChangeKind::kMode, &ust, &lst);
      } else {
        add(rel, in_lower ? ChangeKind::kModified : ChangeKind::kAdded, &ust, in_lower ? &lst : nullptr);
      }
      return walk(sub.get(), lower_sub.valid() ? lower_sub.get() : -1, rel);
    }
    if (!in_lower) {
      add(rel, ChangeKind::kAdded, &ust, nullptr);
    } else if (type_of(ust.st_mode) != type_of(lst.st_mode) || S_ISDIR(lst.st_mode)) {
      add(rel, ChangeKind::kModified, &ust, &lst);
    } else if (S_ISREG(ust.st_mode)) {
      bool same = ust.st_size == lst.st_size;
      if (same) {
        TNK_ASSIGN_OR_RETURN(same, same_content(upper, lower, name, rel));
      }
      if (!same) {
        add(rel, ChangeKind::kModified, &ust, &lst);
      } else if (perm(ust.st_mode) != perm(lst.st_mode)) {
        add(rel, ChangeKind::kMode, &ust, &lst);
      }
    } else if (S_ISLNK(ust.st_mode)) {
      if (link_target(upper, name) != link_target(lower, name)) add(rel, ChangeKind::kModified, &ust, &lst);
    } else {
      add(rel, ChangeKind::kModified, &ust, &lst);
    }
    return ok_status();
  }

  void add(const std::string& rel, ChangeKind kind, const struct stat* now, const struct stat* before) {
    Change c;
    c.path = rel;
    c.kind = kind;
    if (now != nullptr) {
      c.type = type_of(now->st_mode);
      c.new_mode = perm(now->st_mode);
    }
    if (before != nullptr) {
      c.old_type = type_of(before->st_mode);
      c.old_mode = perm(before->st_mode);
    }
    c.host_run = host_run_reason(rel);
    out_.push_back(std::move(c));
  }

  std::vector<Change>& out_;
};

}  // namespace

const char* to_string(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::kAdded: return "added";
    case ChangeKind::kModified: return "modified";
    case ChangeKind::kDeleted: return "deleted";
    case ChangeKind::kMode: return "mode";
  }
  return "?";
}

const char* to_string(EntryType type) {
  switch (type) {
    case EntryType::kNone: return "none";
    case EntryType::kFile: return "file";
    case EntryType::kDir: return "dir";
    case EntryType::kSymlink: return "symlink";
    case EntryType::kOther: return "other";
  }
  return "?";
}

Result<std::vector<Change>> diff_layer(int upper_fd, int project_fd) {
  std::vector<Change> out;
  Differ differ(out);
  TNK_RETURN_IF_ERROR(differ.walk(upper_fd, project_fd, ""));
  std::sort(out.begin(), out.end(), [](const Change& a, const Change& b) { return a.path < b.path; });
  return out;
}

bool selects(const std::string& selector, const std::string& path) {
  if (selector.empty() || selector == path) return true;
  return path.size() > selector.size() && path.starts_with(selector) && path[selector.size()] == '/';
}

}  // namespace tnk::review
