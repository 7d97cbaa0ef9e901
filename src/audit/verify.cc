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
  // Returns the problem with `line` (without its '\n'), or "" when it continues the chain.
  std::string check(std::string_view line, size_t line_no) {
    nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
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

VerifyReport finish(const ChainChecker& checker, size_t bad_line, std::string problem) {
  VerifyReport report;
  report.records = checker.records();
  report.last_hash = checker.last_hash();
  report.ok = problem.empty();
  report.bad_line = report.ok ? 0 : bad_line;
  report.problem = std::move(problem);
  return report;
}

// Splits what was read into lines; `pending` keeps the unfinished last one.
// Returns the problem of the first broken line ("" when all were fine) and sets `line_no` to it.
std::string check_complete_lines(ChainChecker& checker, std::string& pending, size_t scan_from, size_t& line_no) {
  size_t start = 0;
  for (size_t nl = pending.find('\n', scan_from); nl != std::string::npos; nl = pending.find('\n', start)) {
    ++line_no;
    std::string problem = checker.check(std::string_view(pending).substr(start, nl - start), line_no);
    if (!problem.empty()) return problem;
    start = nl + 1;
  }
  pending.erase(0, start);
  if (pending.size() > kMaxRecordBytes) {
    ++line_no;
    return kBadJson + ": " + line_str(line_no) + " is longer than 64 MiB";
  }
  return {};
}

}  // namespace

Result<VerifyReport> verify_log(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid())
    return sys_error(errno, "cannot read audit log " + path.string(), "check the path given to `tnk audit verify`");
  ChainChecker checker;
  std::string pending;
  size_t line_no = 0;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error(errno, "cannot read audit log " + path.string());
    if (n == 0) break;
    size_t scan_from = pending.size();
    pending.append(buf, static_cast<size_t>(n));
    std::string problem = check_complete_lines(checker, pending, scan_from, line_no);
    if (!problem.empty()) return finish(checker, line_no, std::move(problem));
  }
  if (!pending.empty()) {
    return finish(checker, line_no + 1, kBadJson + ": " + line_str(line_no + 1) + " does not end with a newline");
  }
  return finish(checker, 0, {});
}

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
