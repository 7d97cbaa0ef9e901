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

Error sys_error(int err, const std::string& what, std::string hint) {
  ErrorKind kind = ErrorKind::kFailed;
  if (err == ENOENT) kind = ErrorKind::kNotFound;
  if (err == EACCES || err == EPERM) kind = ErrorKind::kPermission;
  return Error{kind, what + ": " + std::strerror(err), std::move(hint), err};
}

}  // namespace tnk
