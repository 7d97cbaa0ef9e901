// The image cache: immutable Debian root trees under Paths::images_dir(), one directory per image
// id (the recipe's hash), shared by every sandbox. An image directory appears only complete (built
// elsewhere, then renamed into place) and is never changed afterwards.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/log.h"
#include "core/paths.h"
#include "core/result.h"
#include "image/recipe.h"

namespace tnk::image {

struct ImageInfo {
  std::string id;
  std::filesystem::path dir, rootfs;
  uint64_t size_bytes = 0;  // apparent size of the tree, each hard-linked file once
  uint64_t inodes = 0;      // files, directories, links and device nodes in the tree
  int64_t built_at = 0;     // Unix seconds
  double build_seconds = 0;
  nlohmann::json recipe;  // recipe_to_json() of the recipe it was built from
  std::string recipe_hash;
  std::string mmdebstrap_version;
  std::string problem;  // list_images only: why the directory is not a usable image; "" when it is
};

struct BuildOptions {
  bool force = false;                     // build even when the image exists, then swap the new tree in
  std::string mmdebstrap = "mmdebstrap";  // the program (a path, or a name looked up in PATH)
  std::chrono::seconds timeout{std::chrono::minutes(30)};
  std::chrono::seconds lock_timeout{std::chrono::minutes(30)};  // waiting for another builder
};

// Returns the cached image for this recipe, building it first when absent (or unusable): a flock on
// <images>/<id>.lock makes concurrent callers build once; the tree is built in
// <images>/.build-<id>-<pid>/ and renamed into place, so a failed or killed build leaves no image
// behind (its work directory is removed by the next build). Progress goes to `log`; the full
// mmdebstrap output to <images>/<id>.build.log. Root builds in mmdebstrap's root mode, an ordinary
// user in its unshare mode (the tree then belongs to the user's subordinate range; permission_denied
// without one); not_found when mmdebstrap is missing; failed, with the last lines of its output, when
// mmdebstrap fails.
Result<ImageInfo> ensure_image(const Paths& paths, const Recipe& recipe, Log& log);

// The mmdebstrap command a build in `work` runs for the calling user: root mode into work/rootfs for
// root, unshare mode into the tarball work/rootfs.tar for an ordinary user.
std::vector<std::string> build_command(const Recipe& recipe, const std::filesystem::path& work);
Result<ImageInfo> ensure_image(const Paths& paths, const Recipe& recipe, Log& log, const BuildOptions& options);

// Every directory in the cache that is not a work directory, sorted by id; unusable ones carry a
// `problem`. A missing cache directory is an empty list.
Result<std::vector<ImageInfo>> list_images(const Paths& paths);
// The image with this id: not_found when absent, failed when its directory is not a usable image.
Result<ImageInfo> find_image(const Paths& paths, const std::string& id);

// Removes an image (also an unusable one) and its lock and build log. Refuses (failed) when
// `used_by` (the sandboxes whose record names it) is not empty, unless `force`; refuses while a
// build of it runs. The directory is renamed away first, so a crash leaves no half-image.
Status remove_image(const Paths& paths, const std::string& id, const std::vector<std::string>& used_by = {},
                    bool force = false);

// The refusal remove_image gives for an image in use (also used by callers that check first).
Error in_use_error(const std::string& id, const std::vector<std::string>& used_by);

// Removes work directories (.build-*, .rm-*) whose owner is gone: those of `held_id` (whose lock
// the caller holds) and those of any id whose lock is free. Problems are warnings.
void remove_stale_work_dirs(const Paths& paths, Log& log, const std::string& held_id = "");

// Image ids are path components: lowercase letters, digits, '.', '-'; not starting with '.' or '-'.
Status check_image_id(const std::string& id);

// Fails (naming the image, with a hint) when root's files in `rootfs` do not belong to `expected`, the
// host uid that root inside this user's sandboxes is (exposed for tests).
Status check_root_owner(const std::filesystem::path& rootfs, uid_t expected);

// image.json for an image (exposed for tests and fakes).
nlohmann::json image_info_to_json(const ImageInfo& info);
Result<ImageInfo> read_image_dir(const std::filesystem::path& dir);

}  // namespace tnk::image
