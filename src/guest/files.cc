#include "guest/files.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <vector>

#include "core/files.h"

namespace tnk::guest {
namespace {

// mkdir -p for the parents of `path`; new directories are 0755 and owned by uid:gid.
Status make_parents(const std::string& path, uint32_t uid, uint32_t gid) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::vector<std::filesystem::path> missing;
  for (auto p = parent; !p.empty() && p != p.root_path(); p = p.parent_path()) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) == 0) break;
    missing.push_back(p);
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0755) != 0 && errno != EEXIST) return sys_error(errno, "cannot create " + it->string());
    if (::chown(it->c_str(), uid, gid) != 0 && ::geteuid() == 0) {
      return sys_error(errno, "cannot change the owner of " + it->string());
    }
  }
  return ok_status();
}

}  // namespace

FileTransfer::FileTransfer(agent::FilePut put, UniqueFd fd, std::string tmp)
    : put_(std::move(put)), fd_(std::move(fd)), tmp_(std::move(tmp)) {}

FileTransfer::FileTransfer(FileTransfer&& other) noexcept
    : put_(std::move(other.put_)), fd_(std::move(other.fd_)), tmp_(std::exchange(other.tmp_, std::string())) {}

FileTransfer::~FileTransfer() {
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

Result<FileTransfer> FileTransfer::open(const agent::FilePut& put) {
  if (put.parents) TNK_RETURN_IF_ERROR(make_parents(put.path, put.uid, put.gid));
  std::string tmp = put.path + ".tnk-XXXXXX";
  UniqueFd fd(::mkostemp(tmp.data(), O_CLOEXEC));
  if (!fd.valid()) return sys_error(errno, "cannot create a file next to " + put.path);
  FileTransfer transfer(put, std::move(fd), tmp);
  if (::fchown(transfer.fd_.get(), put.uid, put.gid) != 0 && (::geteuid() == 0 || put.uid != ::geteuid())) {
    return sys_error(errno,
                     "cannot give " + put.path + " to " + std::to_string(put.uid) + ":" + std::to_string(put.gid));
  }
  if (::fchmod(transfer.fd_.get(), static_cast<mode_t>(put.mode)) != 0) {
    return sys_error(errno, "cannot set the mode of " + put.path);
  }
  return transfer;
}

Status FileTransfer::append(std::string_view bytes) {
  return write_all(fd_.get(), std::string(bytes), "writing " + put_.path);
}

Status FileTransfer::commit() {
  if (::fsync(fd_.get()) != 0) return sys_error(errno, "writing " + put_.path);
  fd_.reset();
  if (::rename(tmp_.c_str(), put_.path.c_str()) != 0) return sys_error(errno, "cannot put " + put_.path);
  tmp_.clear();
  return ok_status();
}

}  // namespace tnk::guest
