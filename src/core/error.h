// Error values: what failed, on which object, why, and what to do about it.
// The kind (never the message text) decides the exit code.
#pragma once

#include <string>

namespace tnk {

enum class ErrorKind {
  kFailed,      // exit 1: the operation failed
  kUsage,       // exit 64 (EX_USAGE): bad flags, names, or used from the wrong place
  kNotFound,    // exit 66 (EX_NOINPUT): a file, profile or sandbox does not exist
  kPermission,  // exit 77 (EX_NOPERM): the OS or policy refused
};

// Documented exit codes (docs/exit-codes.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 64;
inline constexpr int kExitNotFound = 66;
inline constexpr int kExitPermission = 77;

int exit_code_for(ErrorKind kind);

struct Error {
  ErrorKind kind = ErrorKind::kFailed;
  std::string message;  // "cannot read /x/y: No such file or directory"
  std::string hint;     // "run `tnk init`"; may be empty
  int sys_errno = 0;    // the errno behind it, 0 when none

  // Adds context in front of the message: "loading config: <message>".
  Error context(const std::string& what) const;
  Error with_hint(std::string new_hint) const;
};

Error failed(std::string message, std::string hint = {});
Error usage_error(std::string message, std::string hint = {});
Error not_found(std::string message, std::string hint = {});
Error permission_denied(std::string message, std::string hint = {});
// "<what>: <strerror>", kind chosen from errno (ENOENT -> not found, EACCES/EPERM -> permission).
// Without a hint, a full (ENOSPC, EDQUOT, EFBIG) or read-only (EROFS) file system gets one.
Error sys_error(int err, const std::string& what, std::string hint = {});

}  // namespace tnk
