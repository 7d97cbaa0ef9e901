#include "image/tree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/nofollow_dir.h"
#include "core/unique_fd.h"
#include "idmap/userns.h"

namespace tnk::image {
namespace {

// Which mount an entry is on: the mount id where the kernel reports it (it also tells bind mounts
// of the same file system apart), else the device.
struct Where {
  uint64_t mount = 0;
  bool by_mount_id = false;
  uint64_t dev = 0;
  bool operator==(const Where& o) const { return by_mount_id == o.by_mount_id && mount == o.mount && dev == o.dev; }
};

struct Entry {
  struct statx stx;
  Where where;
};

Result<Entry> stat_entry(int dirfd, const char* name, const std::string& path) {
  Entry e{};
  int flags = AT_SYMLINK_NOFOLLOW | (name[0] == '\0' ? AT_EMPTY_PATH : 0);
  if (::statx(dirfd, name, flags, STATX_TYPE | STATX_SIZE | STATX_INO | STATX_MNT_ID, &e.stx) != 0) {
    return sys_error(errno, "cannot stat " + path);
  }
  e.where.by_mount_id = (e.stx.stx_mask & STATX_MNT_ID) != 0;
  e.where.mount = e.where.by_mount_id ? e.stx.stx_mnt_id : 0;
  e.where.dev = (uint64_t{e.stx.stx_dev_major} << 32) | e.stx.stx_dev_minor;
  return e;
}

Result<UniqueFd> open_dir(int dirfd, const char* name, const std::string& path) {
  UniqueFd fd(::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return sys_error(errno, "cannot open directory " + path);
  return fd;
}

using Visit = std::function<Status(int dirfd, const std::string& name, const Entry& e, const std::string& path)>;

// Depth-first, children before their directory (`visit` sees a directory after its contents).
Status walk(int dirfd, const std::string& path, const Where& top, const Visit& visit) {
  TNK_ASSIGN_OR_RETURN(std::vector<std::string> names, dir_names(dirfd, path));
  for (const auto& name : names) {
    std::string child = path + "/" + name;
    TNK_ASSIGN_OR_RETURN(Entry e, stat_entry(dirfd, name.c_str(), child));
    if (S_ISDIR(e.stx.stx_mode)) {
      if (!(e.where == top)) {
        return failed(child + " is a mount point; not going into it",
                      "unmount it (`umount -l " + child + "`) and try again");
      }
      TNK_ASSIGN_OR_RETURN(UniqueFd sub, open_dir(dirfd, name.c_str(), child));
      TNK_RETURN_IF_ERROR(walk(sub.get(), child, top, visit));
    }
    TNK_RETURN_IF_ERROR(visit(dirfd, name, e, child));
  }
  return ok_status();
}

}  // namespace

Result<TreeSize> measure_tree(const std::filesystem::path& dir) {
  TNK_ASSIGN_OR_RETURN(UniqueFd fd, open_dir(AT_FDCWD, dir.c_str(), dir.string()));
  TNK_ASSIGN_OR_RETURN(Entry top, stat_entry(fd.get(), "", dir.string()));
  TreeSize size;
  std::set<std::pair<uint64_t, uint64_t>> seen;
  auto count = [&](const Entry& e) {
    if (!seen.insert({e.where.dev, e.stx.stx_ino}).second) return;
    size.inodes += 1;
    size.bytes += e.stx.stx_size;
  };
  count(top);
  TNK_RETURN_IF_ERROR(
      walk(fd.get(), dir.string(), top.where, [&](int, const std::string&, const Entry& e, const std::string&) {
        count(e);
        return ok_status();
      }));
  return size;
}

Status remove_tree(const std::filesystem::path& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return ok_status();
    return sys_error(errno, "cannot open directory " + dir.string());
  }
  TNK_ASSIGN_OR_RETURN(Entry top, stat_entry(fd.get(), "", dir.string()));
  TNK_RETURN_IF_ERROR(walk(fd.get(), dir.string(), top.where,
                           [](int dirfd, const std::string& name, const Entry& e, const std::string& path) -> Status {
                             int flags = S_ISDIR(e.stx.stx_mode) ? AT_REMOVEDIR : 0;
                             if (::unlinkat(dirfd, name.c_str(), flags) != 0) {
                               return sys_error(errno, "cannot remove " + path);
                             }
                             return ok_status();
                           }));
  fd.reset();
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) return sys_error(errno, "cannot remove " + dir.string());
  return ok_status();
}

namespace {

// Runs `work` as the mapped root of the user's range.
Status as_range_owner(const std::string& what, const std::function<Status()>& work) {
  auto done = idmap::run_as_range_owner(what, [&]() -> Result<std::string> {
    TNK_RETURN_IF_ERROR(work());
    return std::string();
  });
  if (!done) return done.error();
  return ok_status();
}

}  // namespace

Result<TreeSize> measure_owned_tree(const std::filesystem::path& dir) {
  auto size = measure_tree(dir);
  if (size.ok() || ::geteuid() == 0 || size.error().kind != ErrorKind::kPermission) return size;
  TNK_ASSIGN_OR_RETURN(std::string text,
                       idmap::run_as_range_owner("measure " + dir.string(), [&]() -> Result<std::string> {
                         TNK_ASSIGN_OR_RETURN(TreeSize inner, measure_tree(dir));
                         return std::to_string(inner.bytes) + " " + std::to_string(inner.inodes);
                       }));
  TreeSize out;
  if (std::sscanf(text.c_str(), "%" SCNu64 " %" SCNu64, &out.bytes, &out.inodes) != 2) {
    return failed("measuring " + dir.string() + ": an unreadable answer from the range's root");
  }
  return out;
}

Status remove_owned_tree(const std::filesystem::path& dir) {
  Status removed = remove_tree(dir);
  if (removed.ok() || ::geteuid() == 0 || removed.error().kind != ErrorKind::kPermission) return removed;
  return as_range_owner("remove " + dir.string(), [&] { return remove_tree(dir); });
}

Status give_agent_files_to_user(const std::filesystem::path& dir) {
  constexpr uint32_t kUserInOwnerNs = idmap::kInsideIdCount;  // owner_maps() maps the user there
  return as_range_owner("give " + dir.string() + "'s agent files to the user", [&]() -> Status {
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return sys_error(errno, "cannot open directory " + dir.string());
    TNK_ASSIGN_OR_RETURN(Entry top, stat_entry(fd.get(), "", dir.string()));
    return walk(fd.get(), dir.string(), top.where,
                [](int dirfd, const std::string& name, const Entry& e, const std::string& path) -> Status {
                  bool uid = e.stx.stx_uid == idmap::kAgentId, gid = e.stx.stx_gid == idmap::kAgentId;
                  if (!uid && !gid) return ok_status();
                  if (::fchownat(dirfd, name.c_str(), uid ? kUserInOwnerNs : e.stx.stx_uid,
                                 gid ? kUserInOwnerNs : e.stx.stx_gid, AT_SYMLINK_NOFOLLOW) != 0) {
                    return sys_error(errno, "cannot change the owner of " + path);
                  }
                  // chown clears set-id bits; agent's files in a fresh image have none to keep.
                  return ok_status();
                });
  });
}

}  // namespace tnk::image
