// The vm backend's build products, kept beside the image trees: guest kernels (one per machine and
// kernel config) and base disks (one per image and tnk-agent). Each is a directory <root>/<id>/ with
// one JSON file that describes it; it is built in a work directory under <root>/<id>.lock and renamed
// into place when complete, so it appears whole or not at all, and is never changed afterwards.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/file_lock.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/result.h"

namespace tnk::vm::boot {

struct ArtifactKind {
  const char* noun;       // "kernel", "disk": in messages
  const char* dir_name;   // the directory under Paths::cache_dir
  const char* json_file;  // the description inside each <id>/ directory
  int schema;             // the json's current "schema"; another one is reported, not used
};

// $XDG_CACHE_HOME/tnk/kernels/<kernel-id>/{vmlinux,config,kernel.json}
inline constexpr ArtifactKind kKernelKind{"kernel", "kernels", "kernel.json", 1};
// $XDG_CACHE_HOME/tnk/disks/<disk-id>/{base.img,disk.json}
inline constexpr ArtifactKind kDiskKind{"disk", "disks", "disk.json", 1};

// Beside each <id>/: <id>.lock (flock: one builder) and <id>.build.log (the last build's output).
// Work directories: .build-<id>-<pid>/ (a build) and .rm-<id>-<pid>/ (a removal).
std::filesystem::path artifact_root(const Paths& paths, const ArtifactKind& kind);
std::filesystem::path artifact_lock_path(const Paths& paths, const ArtifactKind& kind, const std::string& id);
std::filesystem::path artifact_log_path(const Paths& paths, const ArtifactKind& kind, const std::string& id);

struct ArtifactEntry {
  std::string id;
  std::filesystem::path dir;
  nlohmann::json doc;   // the json file; null when unusable
  std::string problem;  // why the directory is unusable; "" when it is usable
};

// The json of the artifact in `dir`: failed (with a hint to remove it) when it is missing, malformed,
// of another schema, or names another id.
Result<nlohmann::json> read_artifact(const std::filesystem::path& dir, const ArtifactKind& kind);
// The usable artifact `id`: not_found when absent; failed (like read_artifact) when `main_file` is
// given and is not a file in its directory.
Result<ArtifactEntry> find_artifact(const Paths& paths, const ArtifactKind& kind, const std::string& id,
                                    const char* main_file = nullptr);
// Every non-work directory of that kind, sorted by id; unusable ones carry a problem.
Result<std::vector<ArtifactEntry>> list_artifacts(const Paths& paths, const ArtifactKind& kind);
// find_artifact and list_artifacts, each entry turned into the caller's description by `from`.
template <typename Info>
Result<Info> find_artifact_as(const Paths& paths, const ArtifactKind& kind, const std::string& id,
                              const char* main_file, Info (*from)(const ArtifactEntry&)) {
  TNK_ASSIGN_OR_RETURN(ArtifactEntry entry, find_artifact(paths, kind, id, main_file));
  return from(entry);
}
template <typename Info>
Result<std::vector<Info>> list_artifacts_as(const Paths& paths, const ArtifactKind& kind,
                                            Info (*from)(const ArtifactEntry&)) {
  TNK_ASSIGN_OR_RETURN(std::vector<ArtifactEntry> entries, list_artifacts(paths, kind));
  std::vector<Info> out;
  for (const auto& e : entries) out.push_back(from(e));
  return out;
}
// Renames the directory away under its lock, then deletes it with its lock and log.
Status remove_artifact(const Paths& paths, const ArtifactKind& kind, const std::string& id);

// The lock of artifact `id`, waiting up to `timeout` (a line on `log` when it has to wait).
Result<FileLock> lock_artifact(const Paths& paths, const ArtifactKind& kind, const std::string& id,
                               std::chrono::milliseconds timeout, Log& log);
// With the lock held: removes work directories left by earlier builds of `id` and makes a new one.
Result<std::filesystem::path> fresh_work_dir(const Paths& paths, const ArtifactKind& kind, const std::string& id);
// With the lock held: writes `doc` (its "schema" and "id" set here) into `work`, syncs and renames
// `work` to <root>/<id>, replacing an existing one (a forced rebuild).
Status install_artifact(const Paths& paths, const ArtifactKind& kind, const std::string& id,
                        const std::filesystem::path& work, nlohmann::json doc);
// With the lock held: the whole build of `id` (a fresh work directory, `build` filling it and
// returning the json's facts, then install_artifact with "built_at" and "build_seconds" added). On
// failure the work directory is removed and the error names `what` ("base disk <id>"). Returns the
// seconds the build took.
Result<double> build_artifact(const Paths& paths, const ArtifactKind& kind, const std::string& id,
                              const std::string& what,
                              const std::function<Result<nlohmann::json>(const std::filesystem::path& work)>& build);

// Free space under `dir`: failed naming what needs it when below `need` bytes.
Status check_free_space_for(const std::filesystem::path& dir, uint64_t need, const std::string& what);

}  // namespace tnk::vm::boot
