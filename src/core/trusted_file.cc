#include "core/trusted_file.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "core/files.h"
#include "core/unique_fd.h"

namespace tnk {
namespace fs = std::filesystem;
namespace {

Error refuse(const std::string& what, const fs::path& path, const std::string& why, std::string hint) {
  return permission_denied("refusing to read " + what + " " + path.string() + ": " + why, std::move(hint));
}

// The group `gid` as the name service has it, for is_private_group.
std::optional<GroupFacts> group_facts(gid_t gid, uid_t owner) {
  std::vector<char> buf(16384);
  struct group gr {};
  struct group* found = nullptr;
  struct passwd pw {};
  struct passwd* user = nullptr;
  if (::getgrgid_r(gid, &gr, buf.data(), buf.size() / 2, &found) != 0 || found == nullptr) return std::nullopt;
  GroupFacts facts{gr.gr_name, {}, "", 0};
  for (char** member = gr.gr_mem; *member != nullptr; ++member) facts.members.emplace_back(*member);
  if (::getpwuid_r(owner, &pw, buf.data() + buf.size() / 2, buf.size() / 2, &user) != 0 || user == nullptr) {
    return std::nullopt;
  }
  facts.owner_name = user->pw_name;
  facts.owner_primary_gid = user->pw_gid;
  return facts;
}

bool is_private_group(gid_t gid, uid_t owner) {
  std::optional<GroupFacts> facts = group_facts(gid, owner);
  return facts && private_group(*facts, gid);
}

// Returns the reason to refuse the file `st` describes, or success.
Status check_trusted(const struct stat& st, const std::string& what, const fs::path& path) {
  if (S_ISDIR(st.st_mode)) {
    return sys_error(EISDIR, "cannot read " + path.string(), "move the directory away");
  }
  if (!S_ISREG(st.st_mode)) {
    return refuse(what, path, "it is not a regular file", "replace it with a regular file, or move it away");
  }
  TNK_RETURN_IF_ERROR(check_owner(st, "read " + what, path));
  const mode_t mode = st.st_mode & 07777;
  if ((mode & 0002) != 0 || ((mode & 0020) != 0 && !is_private_group(st.st_gid, st.st_uid))) {
    return refuse(what, path, "its mode is " + octal_mode(mode) + ", so others can change it",
                  "check who changed it, then `chmod go-w " + path.string() + "`");
  }
  return ok_status();
}

}  // namespace

bool private_group(const GroupFacts& g, gid_t gid) {
  if (g.name != g.owner_name || g.owner_primary_gid != gid) return false;
  for (const auto& member : g.members) {
    if (member != g.owner_name) return false;
  }
  return true;
}

Status check_owner(const struct stat& st, const std::string& use, const fs::path& path) {
  const uid_t me = ::geteuid();
  if (st.st_uid == me || st.st_uid == 0) return ok_status();
  return permission_denied(
      "refusing to " + use + " " + path.string() + ": it is owned by uid " + std::to_string(st.st_uid) +
          ", not by you (uid " + std::to_string(me) + ")",
      "check who put it there, then `chown " + std::to_string(me) + " " + path.string() + "` or move it away");
}

std::string octal_mode(mode_t mode) {
  std::string out;
  for (int shift = 9; shift >= 0; shift -= 3) out.push_back(static_cast<char>('0' + ((mode >> shift) & 7)));
  return out;
}

Result<std::string> read_trusted_file(const fs::path& path, const std::string& what, LinkPolicy links) {
  int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (links == LinkPolicy::kRefuse ? O_NOFOLLOW : 0);
  UniqueFd fd(::open(path.c_str(), flags));
  if (!fd.valid() && errno == ELOOP && links == LinkPolicy::kRefuse) {
    return refuse(what, path, "it is a symbolic link", "tnk writes this file itself: remove the link");
  }
  if (!fd.valid()) {
    const int err = errno;
    return sys_error(err, "cannot read " + path.string(),
                     err == EACCES ? "make it readable (`chmod u+r " + path.string() + "`), or move it away" : "");
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sys_error(errno, "cannot stat " + path.string());
  TNK_RETURN_IF_ERROR(check_trusted(st, what, path));
  return read_all(fd.get(), path);
}

std::string non_root_writer(const fs::path& path) {
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec);  // what the kernel (and AppArmor) sees executed
  if (ec) return path.string() + " cannot be resolved: " + ec.message();
  fs::path at;
  for (const auto& part : real) {
    at /= part;
    struct stat st {};
    if (::lstat(at.c_str(), &st) != 0) return at.string() + " cannot be read: " + std::strerror(errno);
    if (st.st_uid != 0) return at.string() + " is owned by uid " + std::to_string(st.st_uid);
    bool shared = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
    if (shared && !(S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) != 0)) {
      return at.string() + " is writable by its group or others (mode " + octal_mode(st.st_mode) + ")";
    }
  }
  return "";
}

}  // namespace tnk
