// `tnk config init`: the commented tnk.toml template and writing it with private modes.
#pragma once

#include <string>

#include "core/paths.h"
#include "core/result.h"

namespace tnk {

// The original's seven keys with its comments, word for word, then tnk's own keys commented out with
// their defaults. It loads with no warnings and gives the same values as no file at all.
std::string config_template();

// Writes the template to paths.config_file(): the directory is created (and chmod'ed) 0700, the
// file is written atomically with mode 0600. Returns false and writes nothing when the file exists
// and !force.
Result<bool> write_config_template(const Paths& paths, bool force);

}  // namespace tnk
