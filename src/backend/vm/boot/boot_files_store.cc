// The shared cache mechanics of kernels and base disks: naming, locking, work dirs, install, removal.
#include "backend/vm/boot/boot_files_store.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <ctime>

#include "core/files.h"
#include "core/unique_fd.h"
#include "image/layout.h"
#include "image/store.h"
#include "image/tree.h"

namespace tnk::vm::boot {
namespace {

namespace fs = std::filesystem;

// Built by insert, not "-" + to_string(): GCC 12 at -O3 warns falsely on that (-Wstringop-overflow).
std::string pid_suffix() { return std::to_string(::getpid()).insert(0, 1, '-'); }

// A work directory of `id` (".build-<id>-<digits>", ".rm-<id>-<digits>").
bool is_work_dir_of(const std::string& name, const std::string& id) {
  for (const char* prefix : {image::kBuildPrefix, image::kRemovePrefix}) {
    std::string start = std::string(prefix) + id + "-";
    if (!name.starts_with(start) || name.size() == start.size()) continue;
    std::string rest = name.substr(start.size());
    if (std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; })) return true;
  }
  return false;
}

Status sync_dir(const fs::path& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid() || ::syncfs(fd.get()) != 0) return sys_error(errno, "cannot sync " + dir.string());
  return ok_status();
}

// The error for an unusable artifact directory.
Error unusable(const ArtifactKind& kind, const std::string& id, const std::string& why) {
  return failed(std::string(kind.noun) + " " + id + " is not usable: " + why,
                "remove it with `tnk image rm " + id + "` and build it again with `tnk image build --vm`");
}

}  // namespace

fs::path artifact_root(const Paths& paths, const ArtifactKind& kind) { return paths.cache_dir / kind.dir_name; }

fs::path artifact_lock_path(const Paths& paths, const ArtifactKind& kind, const std::string& id) {
  return artifact_root(paths, kind) / (id + image::kLockSuffix);
}

fs::path artifact_log_path(const Paths& paths, const ArtifactKind& kind, const std::string& id) {
  return artifact_root(paths, kind) / (id + image::kBuildLogSuffix);
}

Result<nlohmann::json> read_artifact(const fs::path& dir, const ArtifactKind& kind) {
  const std::string id = dir.filename().string();
  auto broken = [&](const std::string& why) { return unusable(kind, id, why); };
  auto file = dir / kind.json_file;
  auto text = read_file(file);
  if (!text) return broken(text.error().message);
  try {
    auto doc = nlohmann::json::parse(*text);
    if (doc.at("schema").get<int>() != kind.schema) {
      return broken(file.string() + " has schema " + doc.at("schema").dump() + ", this tnk reads " +
                    std::to_string(kind.schema));
    }
    if (doc.at("id").get<std::string>() != id) return broken(file.string() + " names another id");
    return doc;
  } catch (const nlohmann::json::exception& e) {
    return broken(file.string() + " is malformed: " + e.what());
  }
}

Result<ArtifactEntry> find_artifact(const Paths& paths, const ArtifactKind& kind, const std::string& id,
                                    const char* main_file) {
  TNK_RETURN_IF_ERROR(image::check_image_id(id));
  auto dir = artifact_root(paths, kind) / id;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return not_found("no " + std::string(kind.noun) + " " + id + " in " + artifact_root(paths, kind).string(),
                     "`tnk image build --vm` builds the kernel and the base disk");
  }
  TNK_ASSIGN_OR_RETURN(nlohmann::json doc, read_artifact(dir, kind));
  if (main_file && !fs::is_regular_file(dir / main_file, ec)) {
    return unusable(kind, id, (dir / main_file).string() + " is missing");
  }
  return ArtifactEntry{id, dir, std::move(doc), ""};
}

Result<std::vector<ArtifactEntry>> list_artifacts(const Paths& paths, const ArtifactKind& kind) {
  std::vector<ArtifactEntry> entries;
  auto root = artifact_root(paths, kind);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return entries;
  fs::directory_iterator it(root, ec);
  if (ec) return sys_error(ec.value(), "cannot list " + root.string());
  for (const auto& entry : it) {
    std::string name = entry.path().filename().string();
    if (name.starts_with('.') || entry.is_symlink(ec) || !entry.is_directory(ec)) continue;
    auto doc = read_artifact(entry.path(), kind);
    if (doc) {
      entries.push_back({name, entry.path(), std::move(*doc), ""});
    } else {
      entries.push_back({name, entry.path(), nullptr, doc.error().message});
    }
  }
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return entries;
}

Status remove_artifact(const Paths& paths, const ArtifactKind& kind, const std::string& id) {
  TNK_RETURN_IF_ERROR(image::check_image_id(id));
  auto root = artifact_root(paths, kind);
  auto dir = root / id;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return not_found("no " + std::string(kind.noun) + " " + id + " in " + root.string(),
                     "`tnk image ls` lists the images, kernels and disks");
  }
  TNK_ASSIGN_OR_RETURN(FileLock lock, FileLock::acquire(artifact_lock_path(paths, kind, id), std::chrono::seconds(5),
                                                        {}, image::kBuildLockBusyHint));
  auto doomed = root / (std::string(image::kRemovePrefix) + id + pid_suffix());
  if (::rename(dir.c_str(), doomed.c_str()) != 0) return sys_error(errno, "cannot remove " + dir.string());
  TNK_RETURN_IF_ERROR(image::remove_tree(doomed));
  fs::remove(artifact_log_path(paths, kind, id), ec);
  fs::remove(artifact_lock_path(paths, kind, id), ec);  // waiters notice the unlinked file and start over
  return ok_status();
}

Result<FileLock> lock_artifact(const Paths& paths, const ArtifactKind& kind, const std::string& id,
                               std::chrono::milliseconds timeout, Log& log) {
  TNK_RETURN_IF_ERROR(make_dirs(artifact_root(paths, kind), 0700));
  return FileLock::acquire(
      artifact_lock_path(paths, kind, id), timeout,
      [&] { log.info("waiting for another tnk process that is building " + std::string(kind.noun) + " " + id); },
      image::kBuildLockBusyHint);
}

Result<fs::path> fresh_work_dir(const Paths& paths, const ArtifactKind& kind, const std::string& id) {
  auto root = artifact_root(paths, kind);
  std::error_code ec;
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (is_work_dir_of(entry.path().filename().string(), id)) stale.push_back(entry.path());
  }
  for (const auto& dir : stale) TNK_RETURN_IF_ERROR(image::remove_tree(dir));
  auto work = root / (std::string(image::kBuildPrefix) + id + pid_suffix());
  TNK_RETURN_IF_ERROR(make_dirs(work, 0755));
  return work;
}

Status install_artifact(const Paths& paths, const ArtifactKind& kind, const std::string& id, const fs::path& work,
                        nlohmann::json doc) {
  doc["schema"] = kind.schema;
  doc["id"] = id;
  TNK_RETURN_IF_ERROR(write_file_atomic(work / kind.json_file, doc.dump(2) + "\n", 0644));
  TNK_RETURN_IF_ERROR(sync_dir(work));
  auto root = artifact_root(paths, kind);
  auto dir = root / id;
  std::error_code ec;
  if (fs::exists(dir, ec)) {  // a forced rebuild: the old one goes first
    auto old = root / (std::string(image::kRemovePrefix) + id + pid_suffix());
    if (::rename(dir.c_str(), old.c_str()) != 0) return sys_error(errno, "cannot move " + dir.string() + " aside");
    TNK_RETURN_IF_ERROR(image::remove_tree(old));
  }
  if (::rename(work.c_str(), dir.c_str()) != 0) return sys_error(errno, "cannot move the new " + dir.string());
  return ok_status();
}

Result<double> build_artifact(const Paths& paths, const ArtifactKind& kind, const std::string& id,
                              const std::string& what,
                              const std::function<Result<nlohmann::json>(const fs::path& work)>& build) {
  TNK_ASSIGN_OR_RETURN(fs::path work, fresh_work_dir(paths, kind, id));
  auto started = std::chrono::steady_clock::now();
  auto facts = build(work);
  if (!facts) {
    (void)image::remove_tree(work);
    return facts.error().context("building " + what);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  nlohmann::json doc = *facts;
  doc["built_at"] = static_cast<int64_t>(::time(nullptr));
  doc["build_seconds"] = std::round(seconds * 10) / 10;
  TNK_RETURN_IF_ERROR(install_artifact(paths, kind, id, work, doc));
  return seconds;
}

Status check_free_space_for(const fs::path& dir, uint64_t need, const std::string& what) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return sys_error(errno, "cannot check free space in " + dir.string());
  uint64_t free_bytes = uint64_t{st.f_bavail} * st.f_frsize;
  if (free_bytes < need) {
    return failed("only " + std::to_string(free_bytes / 1'000'000) + " MB free in " + dir.string() + "; " + what +
                      " needs about " + std::to_string(need / 1'000'000) + " MB",
                  "free some space, or point XDG_CACHE_HOME at a larger file system");
  }
  return ok_status();
}

}  // namespace tnk::vm::boot
