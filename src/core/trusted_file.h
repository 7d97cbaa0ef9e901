// Reading a file whose content decides what tnk does (tnk.toml, a manifest, a sandbox record): only
// a regular file that nobody but its owner can write, owned by the user running tnk (or root).
// Anyone else who can write such a file steers tnk: its audit settings, a sandbox's network policy,
// the project a sandbox mounts. ssh refuses its config files for the same reasons.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <string>

#include "core/result.h"

namespace tnk {

enum class LinkPolicy { kFollow, kRefuse };

// The whole content of `path`. `what` names the file in errors ("sandbox record", "configuration").
// A missing file is sys_error(ENOENT) (not found, 66), a directory sys_error(EISDIR) (1); a symbolic
// link with kRefuse, a FIFO or device, another user's file or one writable by group or others is
// permission_denied (77) with the chmod/chown that fixes it. Opened with O_NONBLOCK, so a FIFO at the
// path cannot block the command.
Result<std::string> read_trusted_file(const std::filesystem::path& path, const std::string& what,
                                      LinkPolicy links = LinkPolicy::kFollow);

// Refuses (permission_denied: "refusing to <use> <path>: it is owned by uid N, not by you") a file
// that `st` describes unless this user or root owns it.
Status check_owner(const struct stat& st, const std::string& use, const std::filesystem::path& path);

// "0644": the permission bits as chmod takes them.
std::string octal_mode(mode_t mode);

}  // namespace tnk
