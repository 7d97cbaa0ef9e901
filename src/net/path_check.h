// The one check of a request path that a relay decides on: a path that a server could read as another
// one (percent-encoding, dot or empty segments, characters a server might decode) is refused, so that
// what was checked is what the server serves. The inference forwarder and the route gateway share it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tnk::net {

// Why `path` (without its query) is refused, or nullopt when it is a plain origin-form path. A trailing
// '/' is an empty last segment, refused unless `trailing_slash` (REST APIs use it; it names nothing else).
std::optional<std::string> path_refusal(std::string_view path, bool trailing_slash = false);

}  // namespace tnk::net
