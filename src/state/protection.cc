#include "state/protection.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "core/files.h"
#include "core/unique_fd.h"
#include "state/layout.h"

namespace tnk::state {

namespace {

constexpr std::pair<Protection, std::string_view> kNames[] = {
    {Protection::kProtected, "protected"},
    {Protection::kMissing, "missing"},
    {Protection::kSymlink, "symlink"},
    {Protection::kNotADirectory, "not_a_directory"},
    {Protection::kNotEnforceable, "not_enforceable"},
    {Protection::kAppeared, "appeared"},
};

std::string_view why_unprotected(Protection state) {
  switch (state) {
    case Protection::kMissing: return "missing at start";
    case Protection::kSymlink: return "a symbolic link";
    case Protection::kNotADirectory: return "a file where a directory is expected";
    case Protection::kNotEnforceable: return "not enforceable on this backend";
    case Protection::kAppeared: return "appeared after start, protected from the next start";
    case Protection::kProtected: break;
  }
  return "";
}

}  // namespace

std::string_view to_string(Protection state) {
  for (const auto& [value, name] : kNames) {
    if (value == state) return name;
  }
  return "missing";
}

std::optional<Protection> parse_protection(std::string_view name) {
  for (const auto& [value, known] : kNames) {
    if (known == name) return value;
  }
  return std::nullopt;
}

ProtectedPath classify_path(std::string shown, const std::filesystem::path& base, const std::string& rel) {
  ProtectedPath p{std::move(shown), base / rel, Protection::kMissing};
  UniqueFd dir(::open(base.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  std::filesystem::path reached = base;
  const std::filesystem::path parts(rel);
  for (auto it = parts.begin(); dir.valid() && it != parts.end(); ++it) {
    reached /= *it;
    struct stat st {};
    if (::fstatat(dir.get(), it->c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      p.host_path = reached;
      return p;
    }
    const bool last = std::next(it) == parts.end();
    if (S_ISLNK(st.st_mode)) {
      p.state = Protection::kSymlink;
    } else if (last) {
      p.state = S_ISDIR(st.st_mode) || S_ISREG(st.st_mode) ? Protection::kProtected : Protection::kNotADirectory;
    } else if (!S_ISDIR(st.st_mode)) {
      p.state = Protection::kNotADirectory;
    }
    if (p.state != Protection::kMissing) return p;
    dir.reset(::openat(dir.get(), it->c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  }
  return p;
}

nlohmann::json to_json(const std::vector<ProtectedPath>& paths) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& p : paths) {
    list.push_back({{"path", p.path}, {"host_path", p.host_path.string()}, {"state", to_string(p.state)}});
  }
  return list;
}

Status write_protection(const std::filesystem::path& sandbox_dir, const std::vector<ProtectedPath>& paths) {
  return write_file_atomic(sandbox_dir / kProtectionFile, to_json(paths).dump() + "\n", 0600);
}

Result<std::vector<ProtectedPath>> read_protection(const std::filesystem::path& sandbox_dir) {
  const std::filesystem::path file = sandbox_dir / kProtectionFile;
  std::vector<ProtectedPath> paths;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return paths;
  TNK_ASSIGN_OR_RETURN(std::string text, read_file(file));
  try {
    for (const auto& entry : nlohmann::json::parse(text)) {
      auto state = parse_protection(entry.at("state").get<std::string>());
      if (!state) return failed("unknown protection state in " + file.string() + ": " + entry.at("state").dump());
      paths.push_back({entry.at("path").get<std::string>(), entry.at("host_path").get<std::string>(), *state});
    }
  } catch (const nlohmann::json::exception& e) {
    return failed("reading " + file.string() + ": " + e.what(), "stop and start the sandbox to write it again");
  }
  return paths;
}

std::vector<ProtectedPath> mark_appeared(std::vector<ProtectedPath>& paths) {
  std::vector<ProtectedPath> appeared;
  for (auto& p : paths) {
    struct stat st {};
    if (p.state == Protection::kMissing && ::lstat(p.host_path.c_str(), &st) == 0) {
      p.state = Protection::kAppeared;
      appeared.push_back(p);
    }
  }
  return appeared;
}

std::string unprotected_summary(const std::vector<ProtectedPath>& paths) {
  std::string line;
  for (const auto& p : paths) {
    if (p.state == Protection::kProtected) continue;
    line += (line.empty() ? "" : ", ") + p.path + " (" + std::string(why_unprotected(p.state)) + ")";
  }
  return line.empty() ? line : "not protected: " + line;
}

}  // namespace tnk::state
