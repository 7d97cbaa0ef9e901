#include "audit/log_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "audit/sha256.h"
#include "core/nofollow_dir.h"
#include "core/trusted_file.h"

namespace tnk::audit {
namespace fs = std::filesystem;
namespace {

// O_NONBLOCK so that a FIFO planted at the path cannot block open(); cleared once we know the
// file is regular. O_NOFOLLOW refuses a symlink as the last path component.
constexpr int kOpenFlags = O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK;
constexpr off_t kChunk = 8192;

std::string damaged_hint(const fs::path& path) {
  return "run `tnk audit verify " + path.string() + "`, keep the file as evidence and choose another --audit-log path";
}

Error incomplete_end(const fs::path& path) {
  return failed("cannot continue audit log " + path.string() + ": it ends with an incomplete record",
                damaged_hint(path));
}

Error last_line_too_long(const fs::path& path) {
  return failed("cannot continue audit log " + path.string() + ": its last line is longer than 64 MiB",
                damaged_hint(path));
}

Error open_error(int err, const fs::path& path) {
  if (err == ELOOP) {
    return permission_denied("refusing to open audit log " + path.string() + ": it is a symbolic link",
                             "pass the path of a regular file (or of a new file), not of a link");
  }
  return sys_error(err, "cannot open audit log " + path.string(),
                   err == EACCES ? "check the permissions of " + path.parent_path().string() : "");
}

Status check_opened(const OpenedLog& log, const fs::path& path) {
  if (!S_ISREG(log.st.st_mode)) {
    return permission_denied("refusing to use audit log " + path.string() + ": it is not a regular file",
                             "choose another --audit-log path");
  }
  // Another user's log (root continuing one a user planted) could be read or truncated by them.
  TNK_RETURN_IF_ERROR(check_owner(log.st, "continue audit log", path));
  mode_t mode = log.st.st_mode & 07777;
  if (mode != 0600) {
    return permission_denied(
        "refusing to continue audit log " + path.string() + ": its mode is " + octal_mode(mode) + ", expected 0600",
        "check who changed it, then `chmod 600 " + path.string() + "` or choose another --audit-log path");
  }
  int flags = ::fcntl(log.fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(log.fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return sys_error(errno, "cannot set flags on audit log " + path.string());
  }
  return ok_status();
}

Result<OpenedLog> finish_open(UniqueFd fd, const fs::path& path) {
  OpenedLog log{std::move(fd), {}};
  if (::fstat(log.fd.get(), &log.st) != 0) return sys_error(errno, "cannot stat audit log " + path.string());
  TNK_RETURN_IF_ERROR(check_opened(log, path));
  return log;
}

Status pread_all(int fd, char* buf, size_t len, off_t offset, const fs::path& path) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, buf + done, len - done, offset + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error(errno, "cannot read audit log " + path.string());
    if (n == 0) return failed("audit log " + path.string() + " shrank while it was being read");
    done += static_cast<size_t>(n);
  }
  return ok_status();
}

// The bytes between the previous '\n' (or the start of the file) and the final '\n' at size - 1.
Result<std::string> read_last_line(int fd, off_t size, const fs::path& path) {
  std::vector<std::string> chunks;  // last chunk first
  size_t total = 0;
  off_t pos = size - 1;
  while (pos > 0) {
    off_t len = std::min(kChunk, pos);
    pos -= len;
    std::string buf(static_cast<size_t>(len), '\0');
    TNK_RETURN_IF_ERROR(pread_all(fd, buf.data(), buf.size(), pos, path));
    size_t nl = buf.rfind('\n');
    if (nl != std::string::npos) {
      chunks.push_back(buf.substr(nl + 1));
      break;
    }
    total += buf.size();
    if (total > kMaxRecordBytes) return last_line_too_long(path);
    chunks.push_back(std::move(buf));
  }
  std::string line;
  for (auto it = chunks.rbegin(); it != chunks.rend(); ++it) line += *it;
  return line;
}

// The chain's head is the last line's seq and hash; a last line that is not a record cannot be continued.
Result<ChainHead> head_of_last_line(std::string_view line, const fs::path& path) {
  nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json* seq = record.is_object() && record.contains("seq") ? &record["seq"] : nullptr;
  if (seq == nullptr || !seq->is_number_unsigned() || seq->get<uint64_t>() == 0) {
    return failed("cannot continue audit log " + path.string() + ": its last line is not an audit record with a seq",
                  damaged_hint(path));
  }
  return ChainHead{seq->get<uint64_t>(), sha256_hex(line)};
}

}  // namespace

Result<OpenedLog> open_log_file(const fs::path& path, bool create_parents) {
  auto dir = open_dir_nofollow(path.parent_path(), create_parents ? std::optional<mode_t>(0700) : std::nullopt);
  if (!dir.ok()) return dir.error().context("audit log " + path.string());
  const fs::path name_path = path.filename();
  const char* name = name_path.c_str();
  for (int attempt = 0; attempt < 3; ++attempt) {
    UniqueFd fd(::openat(dir->get(), name, kOpenFlags | O_CREAT | O_EXCL, 0600));
    if (fd.valid()) {
      // The umask may have removed bits from 0600; the rule is exactly 0600.
      if (::fchmod(fd.get(), 0600) != 0) return sys_error(errno, "cannot chmod audit log " + path.string());
      return finish_open(std::move(fd), path);
    }
    if (errno != EEXIST) return open_error(errno, path);
    fd = UniqueFd(::openat(dir->get(), name, kOpenFlags));
    if (fd.valid()) return finish_open(std::move(fd), path);
    if (errno != ENOENT) return open_error(errno, path);
    // Removed between the two opens: try again.
  }
  return failed("cannot open audit log " + path.string() + ": it keeps appearing and disappearing",
                "check which other program writes to " + path.parent_path().string());
}

Result<OpenedLog> reopen_log_file(int fd, const fs::path& path, const struct stat& was) {
  std::string proc = "/proc/self/fd/" + std::to_string(fd);
  UniqueFd again(::open(proc.c_str(), O_RDWR | O_APPEND | O_CLOEXEC | O_NOCTTY));
  Result<OpenedLog> log = again.valid() ? finish_open(std::move(again), path) : open_log_file(path, false);
  if (!log.ok()) return std::move(log).error();
  if (log->st.st_dev != was.st_dev || log->st.st_ino != was.st_ino) {
    return failed("audit log " + path.string() + " was replaced after it was opened",
                  "check which other program moves or deletes " + path.string());
  }
  return log;
}

Result<ChainHead> read_chain_head(int fd, off_t size, const fs::path& path) {
  if (size == 0) return ChainHead{};
  char last = 0;
  TNK_RETURN_IF_ERROR(pread_all(fd, &last, 1, size - 1, path));
  if (last != '\n') return incomplete_end(path);
  TNK_ASSIGN_OR_RETURN(std::string line, read_last_line(fd, size, path));
  return head_of_last_line(line, path);
}

Result<ChainHead> chain_head_of(std::string_view log, const fs::path& path) {
  if (log.empty()) return ChainHead{};
  if (log.back() != '\n') return incomplete_end(path);
  size_t end = log.size() - 1;  // the final '\n'
  size_t before = end == 0 ? std::string_view::npos : log.rfind('\n', end - 1);
  size_t start = before == std::string_view::npos ? 0 : before + 1;
  std::string_view line = log.substr(start, end - start);
  if (line.size() > kMaxRecordBytes) return last_line_too_long(path);
  return head_of_last_line(line, path);
}

}  // namespace tnk::audit
