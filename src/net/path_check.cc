#include "net/path_check.h"

#include <cctype>

namespace tnk::net {
namespace {

// Letters, digits and "-._~:@+/": no '%' (a server decodes it, we would not), nothing else to reinterpret.
bool plain_path(std::string_view path) {
  for (char c : path) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 &&
        std::string_view("-._~:@+/").find(c) == std::string_view::npos)
      return false;
  }
  return true;
}

// "/a/b" has no empty, "." or ".." segment ("/" alone is the root).
bool normal_segments(std::string_view path) {
  if (path == "/") return true;
  std::string_view rest = path.substr(1);
  for (;;) {
    std::string_view segment = rest.substr(0, rest.find('/'));
    if (segment.empty() || segment == "." || segment == "..") return false;
    if (segment.size() == rest.size()) return true;
    rest.remove_prefix(segment.size() + 1);
  }
}

}  // namespace

std::optional<std::string> path_refusal(std::string_view path, bool trailing_slash) {
  if (!path.starts_with('/')) return "not an origin-form path";
  if (trailing_slash && path.size() > 1 && path.ends_with('/')) path.remove_suffix(1);
  if (!plain_path(path)) return "the path has percent-encoding or other characters a server could decode";
  if (!normal_segments(path)) return "the path has an empty, \".\" or \"..\" segment";
  return std::nullopt;
}

}  // namespace tnk::net
