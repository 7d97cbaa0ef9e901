// Reading and removing cached images; building them is in build.cc.
#include "image/store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <system_error>

#include "core/file_lock.h"
#include "core/files.h"
#include "core/json_fields.h"
#include "core/strings.h"
#include "idmap/userns.h"
#include "image/layout.h"
#include "image/tree.h"

namespace tnk::image {
namespace {

std::filesystem::path lock_path(const Paths& paths, const std::string& id) {
  return paths.images_dir() / (id + kLockSuffix);
}

// ".build-<id>-<pid>" / ".rm-<id>-<pid>" -> "<id>"; "" for any other name.
std::string work_dir_owner(const std::string& name) {
  for (const char* prefix : {kBuildPrefix, kRemovePrefix}) {
    std::string_view rest(name);
    if (!rest.starts_with(prefix)) continue;
    rest.remove_prefix(std::string_view(prefix).size());
    size_t dash = rest.rfind('-');
    if (dash == std::string_view::npos || dash + 1 == rest.size()) return "";
    std::string_view pid = rest.substr(dash + 1);
    if (!std::all_of(pid.begin(), pid.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      return "";
    }
    return std::string(rest.substr(0, dash));
  }
  return "";
}

Result<ImageInfo> info_from_json(const JsonFields& f, const std::filesystem::path& dir) {
  ImageInfo info;
  TNK_ASSIGN_OR_RETURN(info.id, f.string("id"));
  info.dir = dir;
  info.rootfs = dir / kRootfsDir;
  TNK_ASSIGN_OR_RETURN(long long size_bytes, f.integer("size_bytes", 0));
  TNK_ASSIGN_OR_RETURN(long long inodes, f.integer("inodes", 0));
  info.size_bytes = static_cast<uint64_t>(size_bytes);
  info.inodes = static_cast<uint64_t>(inodes);
  TNK_ASSIGN_OR_RETURN(info.built_at, f.integer("built_at"));
  TNK_ASSIGN_OR_RETURN(info.build_seconds, f.number("build_seconds"));
  TNK_ASSIGN_OR_RETURN(info.recipe, f.object("recipe"));
  TNK_ASSIGN_OR_RETURN(info.recipe_hash, f.string("recipe_hash"));
  TNK_ASSIGN_OR_RETURN(info.mmdebstrap_version, f.string("mmdebstrap_version"));
  return info;
}

}  // namespace

Status check_image_id(const std::string& id) {
  bool ok = !id.empty() && id.size() <= 100 && id.front() != '.' && id.front() != '-' &&
            std::all_of(id.begin(), id.end(), [](char c) {
              return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
                     c == '.' || c == '-';
            });
  if (!ok || id.find("..") != std::string::npos) {
    return usage_error("not an image id: '" + id + "'",
                       "image ids look like debian-bookworm-<12 hex digits>; `tnk image ls` lists them");
  }
  return ok_status();
}

nlohmann::json image_info_to_json(const ImageInfo& info) {
  return {{"schema", kImageSchema},
          {"id", info.id},
          {"size_bytes", info.size_bytes},
          {"inodes", info.inodes},
          {"built_at", info.built_at},
          {"build_seconds", info.build_seconds},
          {"recipe", info.recipe},
          {"recipe_hash", info.recipe_hash},
          {"mmdebstrap_version", info.mmdebstrap_version}};
}

Result<ImageInfo> read_image_dir(const std::filesystem::path& dir) {
  auto file = dir / kImageJsonFile;
  const std::string name = dir.filename().string();
  const std::string hint = "remove it with `tnk image rm " + name + "`, or rebuild it with `tnk image build --force`";
  auto broken = [&](const std::string& why) { return failed("image " + name + " is not usable: " + why, hint); };
  auto text = read_file(file);
  if (!text) return broken(text.error().message);
  auto doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return broken(file.string() + " is malformed (not a JSON object)");
  JsonFields f(doc, "image " + name + " is not usable: " + file.string(), hint);
  TNK_ASSIGN_OR_RETURN(long long schema, f.integer("schema"));
  if (schema != kImageSchema) {
    return broken(file.string() + " has schema " + std::to_string(schema) + ", this tnk reads " +
                  std::to_string(kImageSchema));
  }
  TNK_ASSIGN_OR_RETURN(ImageInfo info, info_from_json(f, dir));
  if (info.id != name) return broken(file.string() + " names another image, " + info.id);
  std::error_code ec;
  if (!std::filesystem::is_directory(info.rootfs, ec)) return broken(info.rootfs.string() + " is missing");
  return info;
}

namespace {

// The host uid of root's files in an image this process's sandboxes can use: 0 for root, else the start
// of the user's subordinate range. An image of an older tnk has the user's own uid there, which root
// inside no longer maps to: its /var/lib is not root's inside. nullopt: no range (start says so).
std::optional<uid_t> expected_root_owner() {
  if (::geteuid() == 0) return uid_t{0};
  auto ids = idmap::rootless_ids();
  if (!ids) return std::nullopt;
  return static_cast<uid_t>(ids->uids.start);
}

}  // namespace

Status check_root_owner(const std::filesystem::path& rootfs, uid_t expected) {
  struct stat st {};
  if (::lstat(rootfs.c_str(), &st) != 0) return sys_error(errno, "cannot stat " + rootfs.string());
  if (st.st_uid == expected) return ok_status();
  std::string name = rootfs.parent_path().filename().string();
  return failed("image " + name + " is not usable: its root's files belong to host uid " + std::to_string(st.st_uid) +
                    ", but root inside your sandboxes is host uid " + std::to_string(expected) +
                    " (an image built by an older tnk, or by another user)",
                "`tnk image build --force` rebuilds it (a sandbox start does so by itself); sandboxes made from "
                "the old image need `tnk sandbox delete`");
}

Result<ImageInfo> find_image(const Paths& paths, const std::string& id) {
  TNK_RETURN_IF_ERROR(check_image_id(id));
  auto dir = paths.images_dir() / id;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return not_found("no image " + id + " in " + paths.images_dir().string(),
                     "`tnk image ls` lists the images; `tnk image build` builds the current one");
  }
  TNK_ASSIGN_OR_RETURN(ImageInfo info, read_image_dir(dir));
  if (auto expected = expected_root_owner()) {
    TNK_RETURN_IF_ERROR(check_root_owner(info.rootfs, *expected));
  }
  return info;
}

Result<std::vector<ImageInfo>> list_images(const Paths& paths) {
  std::vector<ImageInfo> images;
  std::error_code ec;
  auto root = paths.images_dir();
  if (!std::filesystem::is_directory(root, ec)) return images;
  std::filesystem::directory_iterator it(root, ec);
  if (ec) return sys_error(ec.value(), "cannot list " + root.string());
  for (const auto& entry : it) {
    std::string name = entry.path().filename().string();
    if (name.starts_with('.') || !entry.is_directory(ec) || entry.is_symlink(ec)) continue;
    auto info = read_image_dir(entry.path());
    if (info) {
      images.push_back(std::move(*info));
    } else {
      ImageInfo broken;
      broken.id = name;
      broken.dir = entry.path();
      broken.rootfs = entry.path() / kRootfsDir;
      broken.problem = info.error().message;
      images.push_back(std::move(broken));
    }
  }
  std::sort(images.begin(), images.end(), [](const ImageInfo& a, const ImageInfo& b) { return a.id < b.id; });
  return images;
}

Error in_use_error(const std::string& id, const std::vector<std::string>& used_by) {
  return failed("image " + id + " is used by " + join(used_by),
                "delete those sandboxes first (`tnk sandbox delete` in their projects), or pass --force "
                "(they will not start again until deleted and recreated)");
}

Status remove_image(const Paths& paths, const std::string& id, const std::vector<std::string>& used_by, bool force) {
  TNK_RETURN_IF_ERROR(check_image_id(id));
  auto dir = paths.images_dir() / id;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return not_found("no image " + id + " in " + paths.images_dir().string(), "`tnk image ls` lists the images");
  }
  if (!used_by.empty() && !force) return in_use_error(id, used_by);
  TNK_ASSIGN_OR_RETURN(FileLock lock,
                       FileLock::acquire(lock_path(paths, id), std::chrono::seconds(5), {}, kBuildLockBusyHint));
  auto doomed = paths.images_dir() / (std::string(kRemovePrefix) + id + "-" + std::to_string(::getpid()));
  if (::rename(dir.c_str(), doomed.c_str()) != 0) return sys_error(errno, "cannot remove image " + dir.string());
  TNK_RETURN_IF_ERROR(remove_owned_tree(doomed));
  std::filesystem::remove(paths.images_dir() / (id + kBuildLogSuffix), ec);
  std::filesystem::remove(lock_path(paths, id), ec);  // waiters notice the unlinked file and start over
  return ok_status();
}

void remove_stale_work_dirs(const Paths& paths, Log& log, const std::string& held_id) {
  std::error_code ec;
  std::filesystem::directory_iterator it(paths.images_dir(), ec);
  if (ec) return;
  std::vector<std::filesystem::path> entries;
  for (const auto& entry : it) entries.push_back(entry.path());
  for (const auto& path : entries) {
    std::string owner = work_dir_owner(path.filename().string());
    if (owner.empty() || !check_image_id(owner)) continue;
    std::optional<FileLock> lock;
    if (owner != held_id) {
      auto tried = FileLock::try_acquire(lock_path(paths, owner));
      if (!tried || !*tried) continue;  // its builder (or remover) is still at work
      lock = std::move(*tried);
    }
    log.verbose("removing " + path.string() + ", left behind by an interrupted build or removal");
    if (auto removed = remove_owned_tree(path); !removed) log.warn(removed.error().message);
    if (owner != held_id && !std::filesystem::exists(paths.images_dir() / owner, ec)) {
      std::filesystem::remove(lock_path(paths, owner), ec);
    }
  }
}

}  // namespace tnk::image
