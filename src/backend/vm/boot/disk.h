// The vm backend's root disks: the immutable ext4 base disk made from an image tree (the one the ns
// backend uses as its lower layer) with tnk-agent added as /sbin/tnk-agent, and the per-sandbox qcow2
// overlay on top of it. The base disk is named by image id + agent hash, built with `mke2fs -d` into a
// sparse file without mounting anything and without touching the shared tree, and made read-only
// (0444): an overlay whose base changed would be corrupt, so a base is never rewritten.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/paths.h"
#include "core/result.h"
#include "image/store.h"

namespace tnk::vm::boot {

// Inside a disk's directory (kernel_disk_store.h: <cache>/disks/<disk-id>/).
inline constexpr const char* kBaseDiskFile = "base.img";
// Where the agent is in the guest (the kernel command line's init=).
inline constexpr const char* kGuestAgentPath = "/sbin/tnk-agent";
inline constexpr const char* kDiskLabel = "tnk-root";

// "<image-id>-agent-<first 12 hex of the agent's sha256>".
std::string disk_id(const std::string& image_id, const std::string& agent_sha256);

// The base disk's size for a tree of `tree_bytes` and `tree_inodes`: room for the tree, ext4's own
// metadata and the journal, and headroom, rounded up to a MiB. The guest grows the file system to
// the overlay's size (the manifest's disk) at boot, so this is deliberately small.
uint64_t base_disk_size(uint64_t tree_bytes, uint64_t tree_inodes);

// Pure: mke2fs's argv filling `image` (an existing sparse file of the final size) from `tree`.
std::vector<std::string> mke2fs_argv(const std::filesystem::path& tree, const std::filesystem::path& image);
// Pure: the debugfs command script that adds `agent` (a host file) as the guest's /sbin/tnk-agent,
// owned by root, mode 0755, into `agent_dir` (the directory /sbin resolves to in the tree: "/usr/sbin"
// with Debian's merged /usr). Fails for paths debugfs cannot quote.
Result<std::string> debugfs_agent_script(const std::filesystem::path& agent, const std::string& agent_dir);
// Pure: `qemu-img create` of a qcow2 overlay backed by the raw `base`; size 0 keeps the base's size.
std::vector<std::string> overlay_argv(const std::filesystem::path& base, const std::filesystem::path& overlay,
                                      uint64_t size_bytes);

struct DiskInfo {
  std::string id, image_id, agent_sha256;
  std::filesystem::path dir, base;
  uint64_t size_bytes = 0;       // the file system's size (the file's apparent size)
  uint64_t allocated_bytes = 0;  // what the sparse file really takes
  int64_t built_at = 0;
  double build_seconds = 0;
  std::string problem;  // list_disks only: why the directory is unusable
};

struct DiskBuildOptions {
  // e2fsprogs puts them in /sbin, which an ordinary user's PATH lacks on Debian.
  std::string mke2fs = "/sbin/mke2fs";
  std::string debugfs = "/sbin/debugfs";
  std::chrono::seconds timeout{std::chrono::minutes(10)};
  std::chrono::seconds lock_timeout{std::chrono::minutes(10)};
};

// The base disk of `image` with the agent at `agent`, built first when absent (a second or two):
// under its lock, in a work directory renamed into place. not_found when the agent or the tools are
// missing; failed with their output when a tool fails.
Result<DiskInfo> ensure_disk(const Paths& paths, const image::ImageInfo& image, const std::filesystem::path& agent,
                             Log& log, const DiskBuildOptions& options = {});
Result<DiskInfo> find_disk(const Paths& paths, const std::string& id);
Result<std::vector<DiskInfo>> list_disks(const Paths& paths);

// Creates a sandbox's overlay (0600), with a virtual size of at least `size_bytes`, on `pinned`: a hard
// link to `base` made next to the overlay (a sparse copy when they are on different file systems), so
// that removing or rebuilding `base` in the cache never changes what the overlay reads. Refuses to
// overwrite an existing overlay.
Status create_overlay(const std::filesystem::path& base, const std::filesystem::path& pinned,
                      const std::filesystem::path& overlay, uint64_t size_bytes);

// sha256 hex of a file's content.
Result<std::string> file_sha256(const std::filesystem::path& file);
// file_sha256 of the tnk-agent binary, remembered in paths.memo_dir() (core/file_memo.h).
Result<std::string> agent_sha256(const Paths& paths, const std::filesystem::path& agent);

}  // namespace tnk::vm::boot
