#include "core/error.h"

#include <cerrno>
#include <cstring>

namespace tnk {

int exit_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kFailed: return kExitFailed;
    case ErrorKind::kUsage: return kExitUsage;
    case ErrorKind::kNotFound: return kExitNotFound;
    case ErrorKind::kPermission: return kExitPermission;
  }
  return kExitFailed;
}

Error Error::context(const std::string& what) const {
  Error copy = *this;
  copy.message = what + ": " + message;
  return copy;
}

Error Error::with_hint(std::string new_hint) const {
  Error copy = *this;
  copy.hint = std::move(new_hint);
  return copy;
}

Error failed(std::string message, std::string hint) {
  return Error{ErrorKind::kFailed, std::move(message), std::move(hint), 0};
}
Error usage_error(std::string message, std::string hint) {
  return Error{ErrorKind::kUsage, std::move(message), std::move(hint), 0};
}
Error not_found(std::string message, std::string hint) {
  return Error{ErrorKind::kNotFound, std::move(message), std::move(hint), 0};
}
Error permission_denied(std::string message, std::string hint) {
  return Error{ErrorKind::kPermission, std::move(message), std::move(hint), 0};
}

namespace {

// What to do about the errors a full or read-only file system gives, wherever they happen (a state
// file, an audit log, the image cache): the message already names the path.
std::string default_hint(int err) {
  if (err == ENOSPC || err == EDQUOT || err == EFBIG) {
    return "the file system is full (or a quota or file size limit is reached): free some space and run the "
           "command again";
  }
  if (err == EROFS) return "the file system is mounted read-only: remount it read-write, or use another directory";
  return {};
}

}  // namespace

Error sys_error(int err, const std::string& what, std::string hint) {
  ErrorKind kind = ErrorKind::kFailed;
  if (err == ENOENT) kind = ErrorKind::kNotFound;
  if (err == EACCES || err == EPERM) kind = ErrorKind::kPermission;
  if (hint.empty()) hint = default_hint(err);
  return Error{kind, what + ": " + std::strerror(err), std::move(hint), err};
}

}  // namespace tnk
