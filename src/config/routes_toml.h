// Reads tnk.toml's [[routes]] and [[ssh_routes]] arrays (toml++ is confined to config_file.cc and this). Internal to
// config/.
#pragma once

#ifndef TOML_ASSERT
#define TOML_ASSERT(expr) ((void)0)  // as config_file.cc has it
#endif
#include <toml++/toml.h>

#include <filesystem>
#include <functional>
#include <string>

#include "config/config.h"

namespace tnk::config {

// The error for `node`, "<file>:<line>:<col>: " + `what`, with config_file.cc's hint.
using TomlNodeError = std::function<Error(const toml::node& node, const std::string& what)>;

// Appends each route of `node` (the value of `routes`) to config.routes. Everything is checked here, at
// load: a wrong or unknown key, a missing one, a name used twice.
Status apply_routes(const toml::node& node, Config& config, const std::filesystem::path& home,
                    const TomlNodeError& error);

// Appends each SSH route of `node` (the value of `ssh_routes`) to config.ssh_routes, checked as above.
Status apply_ssh_routes(const toml::node& node, Config& config, const TomlNodeError& error);

}  // namespace tnk::config
