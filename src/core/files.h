// Small file helpers: whole-file reads, atomic writes (temp + fsync + rename + fsync dir),
// and private directories.
#pragma once

#include <sys/types.h>
#include <filesystem>
#include <string>

#include "core/result.h"

namespace tnk {

Result<std::string> read_file(const std::filesystem::path& path);
// The rest of the open file `fd` (`path` names it in errors), retrying on EINTR.
Result<std::string> read_all(int fd, const std::filesystem::path& path);

// Replaces `path` with `content` so that readers see the old or the new file, never a part.
Status write_file_atomic(const std::filesystem::path& path, const std::string& content, mode_t mode = 0600);

// mkdir -p; directories that it creates get `mode`. Existing ones are left as they are.
Status make_dirs(const std::filesystem::path& path, mode_t mode = 0700);

// Writes `value` to a kernel file (/proc, cgroupfs) with one write(2), in place: such files take a
// whole value per write and cannot be replaced by rename.
Status write_kernel_file(const std::filesystem::path& path, const std::string& value);

// Writes all of `data` to `fd`, retrying on EINTR and short writes.
Status write_all(int fd, const std::string& data, const std::string& what);

}  // namespace tnk
