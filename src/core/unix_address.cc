#include "core/unix_address.h"

#include <sys/socket.h>

#include <cstring>
#include <string>

namespace tnk {

Result<sockaddr_un> unix_address(const std::filesystem::path& path, std::string_view what) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string& p = path.native();
  if (p.empty() || p.size() >= sizeof addr.sun_path) {
    return failed(std::string(what) + " path " + p + " is too long for a unix socket (" + std::to_string(p.size()) +
                      " bytes, the limit is " + std::to_string(sizeof addr.sun_path - 1) + ")",
                  "use a shorter XDG_STATE_HOME");
  }
  std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
  return addr;
}

}  // namespace tnk
