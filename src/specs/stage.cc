#include "specs/stage.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <system_error>

namespace tnk::specs {
namespace fs = std::filesystem;

Result<StageDir> StageDir::create(const fs::path& parent, const std::string& prefix) {
  std::string templ = (parent / (prefix + "XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr)
    return sys_error(errno, "cannot create a staging directory in " + parent.string());
  return StageDir(fs::path(templ));
}

StageDir::~StageDir() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);  // best effort: nothing useful to do about a failure here
}

Status copy_tree(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directory(to, ec);
  if (ec) return sys_error(ec.value(), "cannot create " + to.string());
  fs::directory_iterator it(from, ec), end;
  if (ec) return sys_error(ec.value(), "cannot read " + from.string());
  for (; it != end; it.increment(ec)) {
    if (ec) return sys_error(ec.value(), "cannot read " + from.string());
    const fs::path& src = it->path();
    if (src.filename() == ".git") continue;
    fs::file_status st = it->symlink_status(ec);
    if (ec) return sys_error(ec.value(), "cannot stat " + src.string());
    const fs::path dst = to / src.filename();
    if (fs::is_directory(st)) {
      TNK_RETURN_IF_ERROR(copy_tree(src, dst));
      fs::permissions(dst, st.permissions() | fs::perms::owner_all, ec);
    } else if (fs::is_regular_file(st)) {
      fs::copy_file(src, dst, fs::copy_options::none, ec);
      if (ec) return sys_error(ec.value(), "cannot copy " + src.string() + " to " + dst.string());
      // A manifest others can write is refused when it is read (core/trusted_file.h): a checkout
      // made with umask 002 must not install specs tnk then refuses.
      fs::permissions(dst, fs::perms::group_write | fs::perms::others_write, fs::perm_options::remove, ec);
      if (ec) return sys_error(ec.value(), "cannot chmod " + dst.string());
    }
    // Symlinks, sockets, fifos and devices are not specs: skipped.
  }
  if (ec) return sys_error(ec.value(), "cannot read " + from.string());
  return ok_status();
}

}  // namespace tnk::specs
