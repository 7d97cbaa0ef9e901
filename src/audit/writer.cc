#include "audit/writer.h"

#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "audit/log_file.h"

namespace tnk::audit {
namespace fs = std::filesystem;
namespace {

// Holds an exclusive flock on an fd for one append; other tnk processes wait.
class ExclusiveFlock {
 public:
  explicit ExclusiveFlock(int fd) : fd_(fd) {}
  ExclusiveFlock(const ExclusiveFlock&) = delete;
  ExclusiveFlock& operator=(const ExclusiveFlock&) = delete;
  ~ExclusiveFlock() {
    if (locked_) ::flock(fd_, LOCK_UN);
  }
  Status lock(const fs::path& path) {
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) return sys_error(errno, "cannot lock audit log " + path.string());
    }
    locked_ = true;
    return ok_status();
  }

 private:
  int fd_;
  bool locked_ = false;
};

// One write() for the whole line. O_APPEND and regular files make short writes rare (disk full,
// file size limit); the rest is still written under the lock, and on error the partial line is cut
// off again so that the log keeps ending with a complete record.
Status write_line(int fd, const std::string& line, off_t old_size, const fs::path& path) {
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      if (done > 0) {
        [[maybe_unused]] int rc = ::ftruncate(fd, old_size);
      }
      return sys_error(err, "cannot write to audit log " + path.string());
    }
    done += static_cast<size_t>(n);
  }
  return ok_status();
}

Result<std::string> serialize(const nlohmann::json& record, const fs::path& path) {
  try {
    // Invalid UTF-8 (e.g. a file name in argv) becomes U+FFFD rather than losing the record.
    std::string line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (line.size() >= kMaxRecordBytes) {
      return failed("cannot append to audit log " + path.string() + ": record is larger than 64 MiB");
    }
    line.push_back('\n');
    return line;
  } catch (const nlohmann::json::exception& e) {
    return failed("cannot append to audit log " + path.string() + ": " + e.what());
  }
}

}  // namespace

Result<std::string> chained_line(nlohmann::json record, const ChainHead& head, const Clock& now, const fs::path& path) {
  if (!record.is_object())
    return failed("cannot append to audit log " + path.string() + ": a record must be a JSON object");
  record["seq"] = head.seq + 1;
  record["prev"] = head.hash;
  if (!record.contains("ts")) record["ts"] = now ? now() : static_cast<int64_t>(::time(nullptr));
  return serialize(record, path);
}

AuditWriter::AuditWriter(UniqueFd fd, fs::path path, Clock now, dev_t dev, ino_t ino)
    : fd_(std::move(fd)), path_(std::move(path)), now_(std::move(now)), pid_(::getpid()), dev_(dev), ino_(ino) {}

Result<AuditWriter> AuditWriter::open(const fs::path& path, Clock now) {
  std::error_code ec;
  fs::path abs = fs::absolute(path, ec).lexically_normal();
  if (ec) return failed("cannot resolve audit log path " + path.string() + ": " + ec.message());
  if (abs.filename().empty() || abs.filename() == "..") {
    return usage_error("audit log path " + path.string() + " names a directory", "give a file name");
  }
  TNK_ASSIGN_OR_RETURN(OpenedLog log, open_log_file(abs, true));
  {
    // Refuse a damaged log now rather than at the first event.
    ExclusiveFlock lock(log.fd.get());
    TNK_RETURN_IF_ERROR(lock.lock(abs));
    if (::fstat(log.fd.get(), &log.st) != 0) return sys_error(errno, "cannot stat audit log " + abs.string());
    TNK_RETURN_IF_ERROR(read_chain_head(log.fd.get(), log.st.st_size, abs));
  }
  return AuditWriter(std::move(log.fd), std::move(abs), std::move(now), log.st.st_dev, log.st.st_ino);
}

Status AuditWriter::ensure_own_fd() {
  if (::getpid() == pid_) return ok_status();
  struct stat was {};
  was.st_dev = dev_;
  was.st_ino = ino_;
  TNK_ASSIGN_OR_RETURN(OpenedLog log, reopen_log_file(fd_.get(), path_, was));
  fd_ = std::move(log.fd);
  pid_ = ::getpid();
  return ok_status();
}

Status AuditWriter::append(nlohmann::json record) {
  Status appended = append_record(std::move(record));
  if (!appended.ok()) {
    ++unwritten_;
    if (!first_failure_) first_failure_ = appended.error();
  }
  return appended;
}

Status AuditWriter::append_record(nlohmann::json record) {
  TNK_RETURN_IF_ERROR(ensure_own_fd());
  ExclusiveFlock lock(fd_.get());
  TNK_RETURN_IF_ERROR(lock.lock(path_));
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) return sys_error(errno, "cannot stat audit log " + path_.string());
  TNK_ASSIGN_OR_RETURN(ChainHead head, read_chain_head(fd_.get(), st.st_size, path_));
  TNK_ASSIGN_OR_RETURN(std::string line, chained_line(std::move(record), head, now_, path_));
  return write_line(fd_.get(), line, st.st_size, path_);
}

Status AuditWriter::sync() {
  if (::fsync(fd_.get()) != 0) return sys_error(errno, "cannot fsync audit log " + path_.string());
  return ok_status();
}

}  // namespace tnk::audit
