// A route's credential, from where tnk.toml says it is (`source`), read on the host by the command that
// starts a sandbox: env:NAME from that command's environment, file:PATH from a file only its owner can
// read, cmd:PROGRAM ARG... from a program's standard output (run as an argv, never through a shell,
// with a timeout). The value goes only into the supervisor's config; no message here quotes it.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/env.h"
#include "core/result.h"
#include "net/credential_route.h"

namespace tnk {

inline constexpr std::chrono::seconds kRouteCommandTimeout{20};
inline constexpr std::size_t kMaxCredentialBytes = 16 * 1024;

// The credential, trimmed of surrounding white space. Errors name tnk.toml's line, the route and the
// source key, and say what to do: an unset or empty variable, a missing file or one others can read
// (a chmod hint), a command that fails, times out or prints nothing, a value with control characters.
Result<std::string> resolve_route_credential(const Config& config, const RouteSetting& route, const Env& env,
                                             const std::filesystem::path& home);

// Every route of `config` with its credential, its header rendered, and what the gateway masks.
Result<std::vector<net::CredentialRoute>> resolve_routes(const Config& config, const Env& env,
                                                         const std::filesystem::path& home);

}  // namespace tnk
