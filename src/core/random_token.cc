#include "core/random_token.h"

#include <sys/random.h>

#include <cerrno>

namespace tnk {

Result<std::string> random_token() {
  unsigned char bytes[16];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) return sys_error(errno, "getrandom");
  static const char* hex = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) token += {hex[b >> 4], hex[b & 15]};
  return token;
}

}  // namespace tnk
