#include "core/program_path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

namespace tnk {

std::string path_under(const std::filesystem::path& root, const std::string& abs) {
  std::string r = root.string();
  while (!r.empty() && r.back() == '/') r.pop_back();
  return r + abs;
}

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         ::faccessat(AT_FDCWD, path.c_str(), X_OK, AT_EACCESS) == 0;
}

std::string find_on_path(const std::string& name, const std::string& path_var, const std::filesystem::path& root) {
  std::stringstream dirs(path_var);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty() || dir.front() != '/') continue;
    std::string candidate = path_under(root, dir + (dir.back() == '/' ? "" : "/") + name);
    if (is_executable_file(candidate)) return candidate;
  }
  return "";
}

}  // namespace tnk
