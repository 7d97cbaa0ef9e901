#include "state/own_disk.h"

#include <sys/stat.h>

#include <cstdlib>

#include "core/files.h"
#include "disk/client.h"
#include "state/layout.h"

namespace tnk::state {
namespace {

namespace fs = std::filesystem;

// The disk's key is the sandbox's id, the name of its state directory.
std::string key_of(const fs::path& state_dir) { return state_dir.filename().string(); }

bool mounted(const fs::path& state_dir) {
  struct stat disk {
  }, parent{};
  return ::stat((state_dir / kOwnDiskDir).c_str(), &disk) == 0 && ::stat(state_dir.c_str(), &parent) == 0 &&
         disk.st_dev != parent.st_dev;
}

// The bound the disk was last mounted for, kept on the disk beside the layers (the sandbox does not see
// it): a start asks tnk-disk again only when the bound was raised.
uint64_t mounted_bound(const fs::path& state_dir) {
  auto text = read_file(state_dir / kOwnDiskBoundFile);
  return text.ok() ? std::strtoull(text->c_str(), nullptr, 10) : 0;
}

Status remember_bound(const fs::path& state_dir, uint64_t bytes) {
  return write_file_atomic(state_dir / kOwnDiskBoundFile, std::to_string(bytes) + "\n", 0600);
}

}  // namespace

bool has_own_disk(const fs::path& state_dir) {
  struct stat st {};
  return ::lstat((state_dir / kOwnDiskDir).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

NsLayers ns_layers(const fs::path& state_dir) {
  if (has_own_disk(state_dir)) {
    return {state_dir / kOwnDiskUpperDir, state_dir / kOwnDiskWorkDir, state_dir / kOwnDiskReviewUpperDir,
            state_dir / kOwnDiskReviewWorkDir};
  }
  return {state_dir / kUpperDir, state_dir / kOverlayWorkDir, state_dir / kReviewUpperDir, state_dir / kReviewWorkDir};
}

Status mount_own_disk(const fs::path& state_dir, uint64_t bytes) {
  if (!has_own_disk(state_dir) || (mounted(state_dir) && mounted_bound(state_dir) >= bytes)) return ok_status();
  TNK_RETURN_IF_ERROR(disk::attach(key_of(state_dir), state_dir / kOwnDiskDir, bytes, false));
  if (bytes <= mounted_bound(state_dir)) return ok_status();
  return remember_bound(state_dir, bytes);
}

Status make_own_disk(const fs::path& state_dir, uint64_t bytes) {
  TNK_RETURN_IF_ERROR(make_dirs(state_dir / kOwnDiskDir, 0700));
  Status attached = disk::attach(key_of(state_dir), state_dir / kOwnDiskDir, bytes, true);
  if (!attached.ok()) {
    std::error_code ec;
    fs::remove(state_dir / kOwnDiskDir, ec);  // the sandbox goes on without one, as before
    return attached;
  }
  return remember_bound(state_dir, bytes);
}

Status release_own_disk(const fs::path& state_dir) {
  if (!has_own_disk(state_dir)) return ok_status();
  return disk::release(key_of(state_dir), state_dir / kOwnDiskDir);
}

}  // namespace tnk::state
