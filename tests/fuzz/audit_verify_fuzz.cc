// libFuzzer target for the audit log readers (docs/audit-format.md): the input, as the bytes of a log held
// in memory, goes to the verifier (what `tnk audit verify` runs), to the verifier with a SummaryBuilder as
// its sink (what `tnk audit summary` runs) and to the chain head's reader (what the writer reads before it
// continues a log). No file per input: the file readers split the same bytes the same way.
// audit_chain_fuzz.cc writes logs with the writer's record format and edits them.
// Build and run: scripts/fuzz.sh SECONDS audit_verify (tests/fuzz/CMakeLists.txt builds it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "audit/log_file.h"
#include "audit/summary.h"
#include "audit/verify.h"

namespace {

using namespace tnk::audit;

void check_report(const VerifyReport& report) {
  if (!is_sha256_hex(report.last_hash)) std::abort();
  if (report.ok != report.problem.empty() || report.ok != (report.bad_line == 0)) std::abort();
}

// The summary's pass reports the chain as the plain check does, and every request is counted once
// per model, once per session or "no session", and once in the total.
void summarize(std::string_view log, const VerifyReport& plain) {
  SummaryBuilder builder;
  VerifyReport report = verify_log_bytes(log, [&](const nlohmann::json& record) { builder.add(record); });
  if (to_json(report) != to_json(plain)) std::abort();
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

void read_raw(std::string_view input) {
  VerifyReport report = verify_log_bytes(input);
  check_report(report);
  summarize(input, report);
  auto head = chain_head_of(input, "fuzz.ndjson");
  // A log that verifies can be continued, from its last record.
  if (report.ok && (!head.ok() || head->seq != report.records || head->hash != report.last_hash)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  read_raw(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
