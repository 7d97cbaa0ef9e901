// Opening a directory by a path that a less trusted party may be able to change: no symbolic link is
// followed anywhere on the way, so a link planted in a parent cannot send a root-owned write
// elsewhere (security review L6: audit logs).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk {

// Opens the absolute directory `dir` (O_PATH | O_DIRECTORY | O_CLOEXEC) by walking from "/" one
// component at a time with openat(O_NOFOLLOW). A symbolic link in any component is refused
// (permission_denied naming it), never followed; "." and ".." are resolved lexically first.
// With `create_mode`, missing components are created on the way (mkdirat, that mode); without it,
// a missing one is not_found.
Result<UniqueFd> open_dir_nofollow(const std::filesystem::path& dir, std::optional<mode_t> create_mode = std::nullopt);

// The names in the open directory `dirfd` (without . and ..), in readdir's order; `path` names it in
// errors. `dirfd` itself is not consumed.
Result<std::vector<std::string>> dir_names(int dirfd, const std::string& path);

}  // namespace tnk
