// The inference endpoint's API key ([inference] api_key_env or api_key_file in tnk.toml), read when a
// sandbox starts and handed to its supervisor on the config pipe. Never stored: not in Config, a file
// tnk writes, an argument, a log line, an audit record or `inspect`.
#pragma once

#include <filesystem>
#include <string>

#include "config/config.h"
#include "core/env.h"
#include "core/result.h"

namespace tnk {

// The key, or "" when [inference] names neither a variable nor a file. Fails (naming the key of tnk.toml
// and the variable or file) when the variable is unset or empty, or the file is missing (66); when the
// file is one others can read or change, or another user's (77); when the key is empty or has a
// character an HTTP header cannot carry (1). A file's trailing newline is not part of the key.
Result<std::string> read_api_key(const Config& config, const Env& env, const std::filesystem::path& home);

// Where the key comes from, for `config show` and doctor: "env NAME", "file /expanded/path" or "none".
std::string api_key_source(const Config& config, const std::filesystem::path& home);

}  // namespace tnk
