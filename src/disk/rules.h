// What tnk-disk (src/disk/main.cc, the set-user-id helper that gives an ns sandbox a disk of its own size)
// accepts, as pure functions: the names, sizes and files it trusts. Kept apart from its system calls so
// that every rule is unit-tested (tests/unit/disk/rules_test.cc) and the helper stays a short list of steps.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tnk::disk {

// Root's own directory of images, one subdirectory per user id; nothing in it is the user's to write.
inline constexpr const char* kImagesDir = "/var/lib/tnk/disks";
// Who may have disks, and how many bytes of images each may hold in all: "NAME BYTES" lines, written by
// `sudo tnk setup --user NAME` (host/setup_plan.h); root's alone.
inline constexpr const char* kAllowanceFile = "/etc/tnk/disks.conf";
// The smallest disk: ext4 with its journal needs a few MiB of its own before the first file.
inline constexpr uint64_t kMinDiskBytes = 16ull << 20;

// A disk's key (the sandbox id): 1 to 100 of [a-z0-9._-], starting with a letter or digit, no "..".
bool valid_key(std::string_view key);

// A size in bytes, decimal digits only (no sign, no suffix), at most 2^62.
std::optional<uint64_t> parse_bytes(std::string_view text);

// The allowance of `user` in the text of kAllowanceFile: the last "NAME BYTES" line for that name ('#'
// starts a comment); nullopt when the user has none.
std::optional<uint64_t> allowance_for(std::string_view conf, std::string_view user);

// That text with `user`'s allowance set to `bytes`: the user's lines replaced by one, at the end.
std::string with_allowance(std::string_view conf, std::string_view user, uint64_t bytes);

// The user's directory of images, and one image's path.
std::string images_dir(uid_t uid);
std::string image_path(uid_t uid, std::string_view key);

// Whether a loop device's backing file (its /sys/block/loopN/loop/backing_file line) is one of the user's
// images, current or since replaced (" (deleted)").
bool is_users_image(std::string_view backing_file, uid_t uid);

// mkfs.ext4's -E value for a new image: its top directory the user's, the inode tables and the journal
// zeroed by the kernel later instead of now (a new 8 GiB disk is made in tens of milliseconds).
std::string mkfs_root_owner(uid_t uid, gid_t gid);

}  // namespace tnk::disk
