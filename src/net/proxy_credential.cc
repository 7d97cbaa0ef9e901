#include "net/proxy_credential.h"

#include <cstdint>

#include "net/base64.h"

namespace tnk::net {
namespace {

bool same_bytes(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differ |= static_cast<unsigned char>(a[i] ^ b[i]);
  return differ == 0;
}

bool same_scheme(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if ((a[i] | 0x20) != (b[i] | 0x20)) return false;
  }
  return true;
}

}  // namespace

std::string basic_credential(std::string_view user, std::string_view password) {
  std::string pair(user);
  pair += ':';
  pair += password;
  return "Basic " + base64_encode(pair);
}

bool carries_credential(const RequestHead& head, std::string_view expected) {
  std::size_t space = expected.find(' ');
  if (space == std::string_view::npos) return false;
  bool found = false;
  for (const auto& [name, value] : head.headers) {
    if (!same_scheme(name, "proxy-authorization")) continue;
    if (found) return false;  // two of them: no telling which one a server behind would believe
    found = true;
    std::size_t value_space = value.find(' ');
    if (value_space == std::string::npos ||
        !same_scheme(std::string_view(value).substr(0, value_space), expected.substr(0, space))) {
      return false;
    }
    if (!same_bytes(std::string_view(value).substr(value_space + 1), expected.substr(space + 1))) return false;
  }
  return found;
}

}  // namespace tnk::net
