// `tnk config show`: every key with its value and where it came from, as text or JSON.
// Pure functions; the caller prints.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "config/config.h"

namespace tnk {

// {"file": "...", "file_exists": true, "settings": {"server_port": {"value": 8080, "source": "file",
// "line": 3}, ...}}. Unset optionals are null, sizes are bytes; path keys add "path" (expanded);
// env values add "env" (the variable).
nlohmann::json config_to_json(const Config& config);

// One line per key: the key padded to 26 columns, the value (paths expanded, <none> when unset)
// padded to 16, then the source: "(default)", "(file, line 3)" or "(env TNK_SERVER_PORT)".
// The first line names the file.
std::string config_show_text(const Config& config);

}  // namespace tnk
