// Applies the text of tnk.toml to a Config (toml++ is confined to config_file.cc). Internal to config/.
#pragma once

#include <string_view>

#include "config/config.h"

namespace tnk::config {

// Errors carry <file>:<line>:<col>; unknown keys are warned about with <file>:<line> and skipped.
Status apply_config_file(std::string_view text, Config& config, const Paths& paths, Log& log);

}  // namespace tnk::config
