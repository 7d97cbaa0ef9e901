// The TNK_* overrides, applied after tnk.toml. Internal to config/.
#pragma once

#include "config/config.h"

namespace tnk::config {

// A valid value replaces the setting (source kEnv). An invalid one is one warning in the original's
// words, "invalid TNK_X='<v>'; ignoring env override", and the file/default value stays.
void apply_config_env(Config& config, const Env& env, const Paths& paths, Log& log);

}  // namespace tnk::config
