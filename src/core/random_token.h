// A secret for one use: 128 bits from the kernel's random source, as 32 lower-case hex digits.
#pragma once

#include <string>

#include "core/result.h"

namespace tnk {

Result<std::string> random_token();

}  // namespace tnk
