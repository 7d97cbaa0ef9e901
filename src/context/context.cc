#include "context/context.h"

namespace tnk {

Result<const Config*> Context::config() {
  if (!config_) {
    TNK_ASSIGN_OR_RETURN(Config loaded, load_config(paths, env, log));
    config_ = std::move(loaded);
  }
  return &*config_;
}

}  // namespace tnk
