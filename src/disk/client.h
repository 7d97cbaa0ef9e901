// tnk's side of tnk-disk (src/disk/main.cc): whether this user may have disks, and the three requests,
// each one run of the helper with an argv (never a shell) whose one line of refusal becomes the error.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/result.h"

namespace tnk::disk {

// The helper tnk would run: beside the tnk binary (the build tree), else in its install's libexec/tnk/.
std::filesystem::path helper_path();

// Whether a new sandbox of this user gets a disk of its own: the helper is set-user-id root (or this is
// root) and kAllowanceFile names the user. `why_not` says what is missing, for the note.
bool available(std::string* why_not = nullptr);

// Mounts the disk `key` on `dir` (made, or grown, to `bytes`; a new one when `fresh`); nothing to do when
// it is mounted there already. The error names the disk and carries the helper's reason.
Status attach(const std::string& key, const std::filesystem::path& dir, uint64_t bytes, bool fresh);

// Unmounts the disk on `dir` when one is, then deletes the image `key`: what a sandbox's delete does.
Status release(const std::string& key, const std::filesystem::path& dir);

}  // namespace tnk::disk
