// AuditWriter: appends hash-chained NDJSON records to an audit log (docs/audit-format.md).
// It owns the file rules (0600 regular file, no symlink, 0700 parent dirs) and the chain fields
// `seq`, `prev` and `ts`. Several processes may append to one log: each append holds an exclusive
// flock while it reads the last line, computes seq/prev and writes the line with one write().
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "audit/log_file.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::audit {

// Returns Unix seconds; the default is time(nullptr). Tests inject a fixed clock.
using Clock = std::function<int64_t()>;

// The line an append writes for `record` after the log's last record `head`: `seq` and `prev` set, `ts`
// from `now` (time(nullptr) when empty) unless the record has one, keys sorted, ending with '\n'. `path`
// only names the log in errors. The writer's whole record format, for logs built in memory (fuzz targets).
Result<std::string> chained_line(nlohmann::json record, const ChainHead& head, const Clock& now,
                                 const std::filesystem::path& path);

// Not thread-safe: give each thread its own writer (each open() has its own lock).
// Safe across fork(): a child that appends through an inherited writer re-opens the file first,
// so parent and child still exclude each other.
class AuditWriter {
 public:
  // Creates missing parent dirs (0700) and the file (0600). An existing log is continued from its
  // last record; it must be a regular file with mode 0600 that ends with a complete record.
  // A symlink at `path` is refused.
  static Result<AuditWriter> open(const std::filesystem::path& path, Clock now = {});

  // Appends `record` (a JSON object) as one line. Sets `seq` and `prev` (overwriting any given
  // value) and `ts` unless the caller set it. Keys are written sorted.
  Status append(nlohmann::json record);

  // How many records append() could not write (disk full, I/O error) and the first one's error. A
  // failed append leaves the log ending with a complete record, but the record is lost: the command
  // must fail for it (sandbox::audit_outcome) rather than let a gap in the log pass unnoticed.
  int unwritten() const { return unwritten_; }
  const std::optional<Error>& first_failure() const { return first_failure_; }

  // fsync; called at session end.
  Status sync();

  const std::filesystem::path& path() const { return path_; }

  AuditWriter(AuditWriter&&) = default;
  AuditWriter& operator=(AuditWriter&&) = default;

 private:
  AuditWriter(UniqueFd fd, std::filesystem::path path, Clock now, dev_t dev, ino_t ino);
  Status ensure_own_fd();
  Status append_record(nlohmann::json record);

  UniqueFd fd_;
  std::filesystem::path path_;  // absolute
  Clock now_;
  pid_t pid_;  // the process that opened fd_ (a forked child must re-open)
  dev_t dev_;
  ino_t ino_;
  int unwritten_ = 0;
  std::optional<Error> first_failure_;
};

}  // namespace tnk::audit
