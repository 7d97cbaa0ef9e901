// Small text helpers every layer uses for messages.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tnk {

// The items with `separator` between them: {"a", "b"} -> "a, b".
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");

}  // namespace tnk
