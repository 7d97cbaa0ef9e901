// Questions asked on the terminal before something is destroyed (`sandbox delete`, `image rm`).
#pragma once

#include <string>

namespace tnk::cli {

// Asks `question [y/N]` on stderr and reads one line of stdin: true for y, Y or yes only.
bool confirmed(const std::string& question);

}  // namespace tnk::cli
