// Low-level access to an audit log file, shared by AuditWriter: opening it under the file rules,
// and finding the chain head (seq and hash of the last line) by reading backwards from the end.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "audit/chain.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::audit {

struct OpenedLog {
  UniqueFd fd;  // O_RDWR | O_APPEND | O_CLOEXEC; reads are needed to find the chain head
  struct stat st;
};

// Opens or creates (0600) the log at the absolute, normalized `path`; refuses symlinks, non-regular
// files and modes other than 0600. The parent is reached without following a symbolic link in any
// component (open_dir_nofollow), so a link planted in a parent cannot redirect the log; with
// `create_parents`, missing parents are created (0700) the same way, else they must exist.
Result<OpenedLog> open_log_file(const std::filesystem::path& path, bool create_parents);

// A new file descriptor for the same open file as `fd` (via /proc/self/fd), so that flock
// treats it as a separate holder. Falls back to `path` (the same walk, nothing created) and checks
// it is still the same inode.
Result<OpenedLog> reopen_log_file(int fd, const std::filesystem::path& path, const struct stat& was);

struct ChainHead {
  uint64_t seq = 0;                // seq of the last record, 0 for an empty log
  std::string hash{kGenesisPrev};  // sha256 of the last line, genesis for an empty log
};

// Reads only the last line (chunks from the end, never the whole file). Fails when the log does
// not end with a complete, valid record: appending after it would hide the damage.
Result<ChainHead> read_chain_head(int fd, off_t size, const std::filesystem::path& path);

// The same for a whole log held in memory (`path` only names it in errors).
Result<ChainHead> chain_head_of(std::string_view log, const std::filesystem::path& path);

}  // namespace tnk::audit
