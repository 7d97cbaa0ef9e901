#include "review/baseline.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cinttypes>

#include "review/tree.h"

namespace tnk::review {
namespace {

int64_t nanoseconds(const timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; }

}  // namespace

Status stamp_below(int dir, const std::string& rel, Baseline& out) {
  TNK_ASSIGN_OR_RETURN(auto names, list_dir(dir, rel.empty() ? "the project" : rel));
  for (const auto& name : names) {
    std::string child = join_rel(rel, name);
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return sys_error(errno, "checking " + child);
    out[child] = stamp_of(st);
    if (!S_ISDIR(st.st_mode)) continue;
    UniqueFd sub(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub.valid()) return sys_error(errno, "opening " + child);
    TNK_RETURN_IF_ERROR(stamp_below(sub.get(), child, out));
  }
  return ok_status();
}

namespace {

bool parse_number(std::string_view text, auto& value) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

Stamp stamp_of(const struct stat& st) {
  return {static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size), nanoseconds(st.st_mtim),
          nanoseconds(st.st_ctim), static_cast<uint32_t>(st.st_mode)};
}

Result<Baseline> take_baseline(const std::filesystem::path& project) {
  UniqueFd top(::open(project.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!top.valid()) return sys_error(errno, "opening the project " + project.string());
  Baseline out;
  struct stat st {};
  if (::fstat(top.get(), &st) != 0) return sys_error(errno, "checking the project " + project.string());
  out[""] = stamp_of(st);
  TNK_RETURN_IF_ERROR(stamp_below(top.get(), "", out));
  return out;
}

// One record per path: "<ino> <size> <mtime_ns> <ctime_ns> <mode> <path>\0".
std::string serialize_baseline(const Baseline& baseline) {
  std::string text;
  for (const auto& [path, s] : baseline) {
    char numbers[128];
    std::snprintf(numbers, sizeof numbers, "%" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64 " %" PRIu32 " ", s.ino,
                  s.size, s.mtime_ns, s.ctime_ns, s.mode);
    text += numbers;
    text += path;
    text.push_back('\0');
  }
  return text;
}

Result<Baseline> parse_baseline(const std::string& text, const std::string& what) {
  Baseline out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\0', pos);
    if (end == std::string::npos) return failed(what + " is cut short", "`tnk sandbox discard` makes a new one");
    std::string_view record(text.data() + pos, end - pos);
    pos = end + 1;
    Stamp s;
    std::string_view fields[5];
    for (auto& field : fields) {
      size_t space = record.find(' ');
      if (space == std::string_view::npos) return failed(what + " has a malformed record", "`tnk sandbox discard`");
      field = record.substr(0, space);
      record.remove_prefix(space + 1);
    }
    if (!parse_number(fields[0], s.ino) || !parse_number(fields[1], s.size) || !parse_number(fields[2], s.mtime_ns) ||
        !parse_number(fields[3], s.ctime_ns) || !parse_number(fields[4], s.mode)) {
      return failed(what + " has a malformed record", "`tnk sandbox discard` makes a new one");
    }
    out[std::string(record)] = s;
  }
  return out;
}

bool unchanged(const Stamp& before, const Stamp& now) {
  if (S_ISDIR(before.mode) && S_ISDIR(now.mode)) return before.ino == now.ino && before.mode == now.mode;
  return before == now;
}

Result<std::optional<Stamp>> stamp_now(int project_fd, const std::string& rel) {
  struct stat st {};
  TNK_ASSIGN_OR_RETURN(bool exists, stat_below(project_fd, rel, &st));
  if (!exists) return std::optional<Stamp>();
  return std::optional<Stamp>(stamp_of(st));
}

}  // namespace tnk::review
