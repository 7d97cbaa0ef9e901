// libFuzzer target for the audit log readers (docs/audit-format.md): the input, as the bytes of a log in
// a memfd, goes to verify_log (what `tnk audit verify` runs), to verify_log with a SummaryBuilder as its
// sink (what `tnk audit summary` runs) and to read_chain_head (what the writer reads before it continues
// a log). audit_chain_fuzz.cc writes logs with the real writer and edits them.
// Build and run: scripts/fuzz.sh SECONDS audit_verify (tests/fuzz/CMakeLists.txt builds it).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "audit/log_file.h"
#include "audit/summary.h"
#include "audit/verify.h"
#include "core/files.h"
#include "core/unique_fd.h"

namespace {

using namespace tnk;
using namespace tnk::audit;

std::filesystem::path fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

void check_report(const VerifyReport& report) {
  if (!is_sha256_hex(report.last_hash)) std::abort();
  if (report.ok != report.problem.empty() || report.ok != (report.bad_line == 0)) std::abort();
}

// The summary's pass reports the chain as the plain check does, and every request is counted once
// per model, once per session or "no session", and once in the total.
void summarize(const std::filesystem::path& log, const VerifyReport& plain) {
  SummaryBuilder builder;
  auto report = verify_log(log, [&](const nlohmann::json& record) { builder.add(record); });
  if (!report.ok() || to_json(*report) != to_json(plain)) std::abort();
  const Summary& summary = builder.summary();
  size_t per_model = 0, per_session = summary.no_session.requests;
  for (const auto& [model, stats] : summary.models) per_model += stats.requests;
  for (const auto& [index, stats] : summary.by_session) {
    if (index >= summary.sessions.size()) std::abort();
    per_session += stats.requests;
  }
  if (per_model != summary.total.requests || per_session != summary.total.requests) std::abort();
  (void)to_json(summary).dump();
}

// The raw input as a log.
void read_raw(std::string_view input) {
  UniqueFd fd(::memfd_create("audit-log", MFD_CLOEXEC));
  if (!fd.valid() || !write_all(fd.get(), std::string(input), "the log").ok()) std::abort();
  auto report = verify_log(fd_path(fd.get()));
  if (!report.ok()) std::abort();  // only an unreadable file fails
  check_report(*report);
  summarize(fd_path(fd.get()), *report);
  auto head = read_chain_head(fd.get(), static_cast<off_t>(input.size()), fd_path(fd.get()));
  // A log that verifies can be continued, from its last record.
  if (report->ok && (!head.ok() || head->seq != report->records || head->hash != report->last_hash)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  read_raw(input);
  return 0;
}
