#include "config/config_env.h"

#include <string>

#include "config/config_values.h"
#include "config/keys.h"

namespace tnk::config {

void apply_config_env(Config& config, const Env& env, const Paths& paths, Log& log) {
  for (const Key& key : keys()) {
    if (key.env.empty()) continue;
    std::string var(key.env);
    auto text = env.get(var);
    if (!text) continue;
    if (text->empty() && var == "TNK_ENGINE_PRESET") {  // the original's own words for this one
      log.warn("TNK_ENGINE_PRESET is empty; ignoring env override");
      continue;
    }
    if (!key.from_env(*text, config, paths.home)) {
      log.warn("invalid " + var + "='" + printable(*text) + "'; ignoring env override");
    }
  }
}

}  // namespace tnk::config
