// Reading a file whose content decides what tnk does (tnk.toml, a manifest, a sandbox record): only
// a regular file that nobody but its owner can write, owned by the user running tnk (or root). A file
// writable by its group is taken when that group is the owner's private group (named after the owner,
// its primary group, no other member): Debian 13 gives users umask 002, and Debian's OpenSSH allows the
// same for the same reason.
// Anyone else who can write such a file steers tnk: its audit settings, a sandbox's network policy,
// the project a sandbox mounts. ssh refuses its config files for the same reasons.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

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

// What decides whether a group is a user's private group (the name service's answer for a file's group
// and owner).
struct GroupFacts {
  std::string name;
  std::vector<std::string> members;
  std::string owner_name;
  gid_t owner_primary_gid = 0;
};

// Pure: the group is named after the owner, is the owner's primary group, and has no other member.
bool private_group(const GroupFacts& group, gid_t gid);

// Why someone other than root could change `path` or put another file in its place: the file or a
// directory on the way to it (links resolved) is not root's, or its group or others may write it (a directory with the
// sticky bit excepted: there only a file's owner renames it). "" when only root can. For a file root
// hands power to, such as the binary an AppArmor profile lets create user namespaces.
std::string non_root_writer(const std::filesystem::path& path);

// "0644": the permission bits as chmod takes them.
std::string octal_mode(mode_t mode);

}  // namespace tnk
