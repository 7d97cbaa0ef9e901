// The name of the effective user, for messages and per-user names (the fix `sudo tnk setup --user NAME`,
// the cgroup tnk-user-NAME).
#pragma once

#include <string>

namespace tnk {

// The user database's name for the effective uid; the uid as digits when it has no entry.
std::string effective_user_name();

}  // namespace tnk
