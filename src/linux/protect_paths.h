// Read-only binds of protected paths (docs/workspace.md), made from the host side: by the ns sandbox's
// PID 1 before it pivots into the sandbox's root, and by virtiofsd's child for a vm before virtiofsd
// starts. Runs after fork: system calls only.
#pragma once

#include <string>
#include <vector>

namespace tnk::linux {

struct ProtectFailure {
  int index = -1;  // which of the paths failed; -1: none did
  int err = 0;
};

// For each path (relative to the mount whose root `top`, an O_PATH fd, opens): binds every parent
// directory below `top` onto itself, so that renaming or removing it fails with EBUSY, then makes a
// read-only bind of the path onto itself (with the mounts below it). A symbolic link anywhere on the
// way fails (ELOOP or ENOTDIR): the paths were classified before, a change since is an error.
ProtectFailure protect_paths(int top, const std::vector<std::string>& rels);

}  // namespace tnk::linux
