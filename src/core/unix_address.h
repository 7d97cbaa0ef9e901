// The address of a unix socket file, checked against sun_path's size: every socket tnk makes or reaches
// by path lives in the state directory, whose length the user chooses (XDG_STATE_HOME).
#pragma once

#include <sys/un.h>

#include <filesystem>
#include <string_view>

#include "core/result.h"

namespace tnk {

// `what` names the socket in the error ("the control socket"); the hint is a shorter XDG_STATE_HOME.
Result<sockaddr_un> unix_address(const std::filesystem::path& path, std::string_view what);

}  // namespace tnk
