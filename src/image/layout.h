// Every file the image cache holds, by name (the image counterpart of src/state/layout.h; the
// directory itself is Paths::images_dir()). Documented in docs/images.md.
#pragma once

namespace tnk::image {

// $XDG_CACHE_HOME/tnk/images/<image-id>/...
inline constexpr const char* kRootfsDir = "rootfs";          // the root tree (read-only lower of `ns` overlays)
inline constexpr const char* kRootfsTarball = "rootfs.tar";  // an ordinary user's build, unpacked into kRootfsDir
inline constexpr const char* kImageJsonFile = "image.json";  // recipe, hash, sizes, build time

// $XDG_CACHE_HOME/tnk/images/<image-id><suffix>
inline constexpr const char* kLockSuffix = ".lock";           // flock: one builder per image id
inline constexpr const char* kBuildLogSuffix = ".build.log";  // the last build's full mmdebstrap output
// The hint of a timeout on a build lock (core/file_lock.h). The builder hands a copy of the locked fd
// to its build process, so the lock stays held while anything of a build runs, even when tnk itself
// was killed (the next builder then waits, rather than deleting a tree that is still being written).
inline constexpr const char* kBuildLockBusyHint =
    "another tnk process is building or removing this image; retry when it has finished";

// $XDG_CACHE_HOME/tnk/images/<prefix><image-id>-<pid>/: work directories, never an image. A build
// fills .build-*, then renames it into place; a removal renames the image to .rm-* first. Any left
// behind by a dead process is removed by the next build.
inline constexpr const char* kBuildPrefix = ".build-";
inline constexpr const char* kRemovePrefix = ".rm-";

// The current schema of image.json; images with another one are reported, not used.
inline constexpr int kImageSchema = 1;

}  // namespace tnk::image
