#include "audit/verify.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string_view>

#include "audit/chain.h"
#include "audit/sha256.h"
#include "core/unique_fd.h"

namespace tnk::audit {
namespace {

const std::string kBadJson = "truncated or invalid JSON";

std::string line_str(size_t n) { return "line " + std::to_string(n); }

std::string missing(uint64_t from, uint64_t to) {
  uint64_t first = from + 1;
  uint64_t last = to - 1;
  std::string which = first == last ? "record " + std::to_string(first)
                                    : "records " + std::to_string(first) + "-" + std::to_string(last);
  if (from == 0) return which + " missing: the log starts at seq " + std::to_string(to);
  return which + " missing: seq jumps from " + std::to_string(from) + " to " + std::to_string(to);
}

// Checks each complete line against the chain so far.
class ChainChecker {
 public:
  // Returns the problem with `line` (without its '\n', parsed as `record`), or "" when it continues
  // the chain.
  std::string check(const nlohmann::json& record, std::string_view line, size_t line_no) {
    if (record.is_discarded()) return kBadJson + ": " + line_str(line_no) + " does not parse";
    if (!record.is_object()) return kBadJson + ": " + line_str(line_no) + " is not a JSON object";
    auto seq_it = record.find("seq");
    if (seq_it == record.end() || !seq_it->is_number_unsigned() || seq_it->get<uint64_t>() == 0) {
      return "invalid seq: " + line_str(line_no) + " has no positive integer \"seq\"";
    }
    auto prev_it = record.find("prev");
    if (prev_it == record.end() || !prev_it->is_string() || !is_sha256_hex(prev_it->get<std::string>())) {
      return "invalid prev: " + line_str(line_no) + " has no \"prev\" of 64 lowercase hex digits";
    }
    uint64_t seq = seq_it->get<uint64_t>();
    if (seq > last_seq_ + 1) return missing(last_seq_, seq);
    if (seq <= last_seq_) {
      return "record duplicated or out of order: seq goes from " + std::to_string(last_seq_) + " to " +
             std::to_string(seq) + " at " + line_str(line_no);
    }
    if (prev_it->get<std::string>() != last_hash_) {
      if (line_no == 1) return "record edited: prev hash of line 1 is not 64 zeros";
      return "record edited: prev hash of " + line_str(line_no) + " does not match " + line_str(line_no - 1);
    }
    last_seq_ = seq;
    last_hash_ = sha256_hex(line);
    return {};
  }
  size_t records() const { return static_cast<size_t>(last_seq_); }
  const std::string& last_hash() const { return last_hash_; }

 private:
  uint64_t last_seq_ = 0;
  std::string last_hash_{kGenesisPrev};
};

// Splits what is read into lines, checks them until the first problem and, with a sink, goes on
// handing the records to it.
class LogWalk {
 public:
  explicit LogWalk(const RecordSink* sink) : sink_(sink) {}

  // Takes the next bytes of the file; false when the rest of the file cannot change the report.
  bool feed(std::string_view data) {
    size_t start = 0;
    for (size_t nl = data.find('\n'); nl != std::string_view::npos; nl = data.find('\n', start)) {
      if (skipping_) {
        skipping_ = false;  // the end of a line already reported as too long
      } else {
        pending_.append(data.substr(start, nl - start));
        take_line(pending_);
      }
      pending_.clear();
      start = nl + 1;
      if (done()) return false;
    }
    if (!skipping_) pending_.append(data.substr(start));
    if (pending_.size() > kMaxRecordBytes) {
      ++line_no_;
      fail(kBadJson + ": " + line_str(line_no_) + " is longer than 64 MiB");
      pending_.clear();
      skipping_ = true;
    }
    return !done();
  }

  // At the end of the file.
  VerifyReport finish() {
    if (!pending_.empty()) {
      ++line_no_;
      fail(kBadJson + ": " + line_str(line_no_) + " does not end with a newline");
    }
    VerifyReport report;
    report.records = checker_.records();
    report.last_hash = checker_.last_hash();
    report.ok = problem_.empty();
    report.bad_line = bad_line_;
    report.problem = problem_;
    return report;
  }

 private:
  void take_line(std::string_view line) {
    ++line_no_;
    nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (sink_ != nullptr && record.is_object()) (*sink_)(record);
    if (problem_.empty()) fail(checker_.check(record, line, line_no_));
  }
  // Keeps the first problem, at the current line.
  void fail(std::string problem) {
    if (problem.empty() || !problem_.empty()) return;
    problem_ = std::move(problem);
    bad_line_ = line_no_;
  }
  bool done() const { return !problem_.empty() && sink_ == nullptr; }

  ChainChecker checker_;
  const RecordSink* sink_;
  std::string pending_;    // the unfinished last line
  bool skipping_ = false;  // inside a line over kMaxRecordBytes, already reported
  size_t line_no_ = 0;
  size_t bad_line_ = 0;
  std::string problem_;
};

constexpr size_t kReadBytes = 65536;

Result<VerifyReport> walk_log(const std::filesystem::path& path, const RecordSink* sink) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) return sys_error(errno, "cannot read audit log " + path.string(), "check the path of the log");
  LogWalk walk(sink);
  char buf[kReadBytes];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error(errno, "cannot read audit log " + path.string());
    if (n == 0 || !walk.feed(std::string_view(buf, static_cast<size_t>(n)))) break;
  }
  return walk.finish();
}

VerifyReport walk_bytes(std::string_view log, const RecordSink* sink) {
  LogWalk walk(sink);
  for (size_t at = 0; at < log.size(); at += kReadBytes) {
    if (!walk.feed(log.substr(at, kReadBytes))) break;
  }
  return walk.finish();
}

}  // namespace

Result<VerifyReport> verify_log(const std::filesystem::path& path) { return walk_log(path, nullptr); }

Result<VerifyReport> verify_log(const std::filesystem::path& path, const RecordSink& on_record) {
  return walk_log(path, &on_record);
}

VerifyReport verify_log_bytes(std::string_view log) { return walk_bytes(log, nullptr); }

VerifyReport verify_log_bytes(std::string_view log, const RecordSink& on_record) { return walk_bytes(log, &on_record); }

nlohmann::json to_json(const VerifyReport& report) {
  nlohmann::json j;
  j["records"] = report.records;
  j["ok"] = report.ok;
  j["bad_line"] = report.ok ? nlohmann::json(nullptr) : nlohmann::json(report.bad_line);
  j["problem"] = report.ok ? nlohmann::json(nullptr) : nlohmann::json(report.problem);
  j["last_hash"] = report.last_hash;
  return j;
}

}  // namespace tnk::audit
