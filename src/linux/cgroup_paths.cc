#include "linux/cgroup_paths.h"

#include <cstdlib>

#include "core/files.h"

namespace tnk::linux {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) parts.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size()) {
      int value = 0;
      bool octal = true;
      for (size_t k = 1; k <= 3; ++k) {
        char c = text[i + k];
        octal = octal && c >= '0' && c <= '7';
        value = value * 8 + (c - '0');
      }
      if (octal) {
        out.push_back(static_cast<char>(value));
        i += 3;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

}  // namespace

std::vector<CgroupMembership> parse_proc_cgroup(std::string_view text) {
  std::vector<CgroupMembership> out;
  for (const auto& line : split(text, '\n')) {
    size_t first = line.find(':');
    size_t second = first == std::string::npos ? std::string::npos : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    CgroupMembership m;
    m.hierarchy = std::atoi(line.substr(0, first).c_str());
    m.controllers = split(std::string_view(line).substr(first + 1, second - first - 1), ',');
    m.path = line.substr(second + 1);
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<CgroupMount> parse_cgroup_mounts(std::string_view mountinfo) {
  std::vector<CgroupMount> out;
  for (const auto& line : split(mountinfo, '\n')) {
    std::vector<std::string> fields = split(line, ' ');
    size_t dash = 0;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (dash < 5 || dash + 2 >= fields.size()) continue;
    const std::string& type = fields[dash + 1];
    if (type != "cgroup" && type != "cgroup2") continue;
    CgroupMount m;
    m.v2 = type == "cgroup2";
    m.root = unescape(fields[3]);
    m.mount_point = unescape(fields[4]);
    if (!m.v2 && dash + 3 < fields.size()) {
      for (auto& opt : split(fields[dash + 3], ',')) {
        if (opt != "rw" && opt != "ro") m.controllers.push_back(opt);
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::optional<fs::path> cgroup_dir(const CgroupMembership& membership, const std::vector<CgroupMount>& mounts) {
  bool v2 = membership.hierarchy == 0 && membership.controllers.empty();
  for (const auto& m : mounts) {
    if (m.v2 != v2) continue;
    if (!v2 && m.controllers != membership.controllers) continue;
    const std::string& path = membership.path;
    if (m.root == "/") return fs::path(m.mount_point.string() + (path == "/" ? "" : path));
    if (path == m.root) return m.mount_point;
    if (path.rfind(m.root + "/", 0) == 0) return fs::path(m.mount_point.string() + path.substr(m.root.size()));
  }
  return std::nullopt;
}

Result<std::optional<fs::path>> own_cgroup_v2_dir() {
  TNK_ASSIGN_OR_RETURN(std::string self, read_file("/proc/self/cgroup"));
  TNK_ASSIGN_OR_RETURN(std::string mountinfo, read_file("/proc/self/mountinfo"));
  std::vector<CgroupMount> mounts = parse_cgroup_mounts(mountinfo);
  for (const auto& m : parse_proc_cgroup(self)) {
    if (m.hierarchy == 0 && m.controllers.empty()) return cgroup_dir(m, mounts);
  }
  return std::optional<fs::path>();
}

std::optional<fs::path> cgroup_v2_mount(const std::vector<CgroupMount>& mounts) {
  for (const auto& m : mounts) {
    if (m.v2 && m.root == "/") return m.mount_point;
  }
  return std::nullopt;
}

std::set<std::string> cgroup_words(const fs::path& file) {
  std::set<std::string> words;
  auto text = read_file(file);
  if (!text.ok()) return words;
  for (auto& word : split(*text, ' ')) {
    if (!word.empty() && word.back() == '\n') word.pop_back();
    if (!word.empty()) words.insert(word);
  }
  return words;
}

}  // namespace tnk::linux
