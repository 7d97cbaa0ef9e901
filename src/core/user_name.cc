#include "core/user_name.h"

#include <pwd.h>
#include <unistd.h>

#include <vector>

namespace tnk {

std::string effective_user_name() {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwuid_r(geteuid(), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) return pw.pw_name;
  return std::to_string(geteuid());
}

}  // namespace tnk
