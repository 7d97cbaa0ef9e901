// libFuzzer target for the audit log's hash chain (docs/audit-format.md): the input's lines that are JSON
// objects are appended, in memory, as the writer appends them (its chain head read back from the log so far,
// then its record format: chained_line) and the log must verify with one record per line; then one byte
// of the log, chosen by the input, is changed: unless the change is in the last line (which nothing after
// it vouches for), the verifier must find it. No file per input (writer_test.cc covers the file itself);
// audit_verify_fuzz.cc feeds the readers raw bytes.
// Build and run: scripts/fuzz.sh SECONDS audit_chain (tests/fuzz/CMakeLists.txt builds it).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>

#include "audit/verify.h"
#include "audit/writer.h"

namespace {

using namespace tnk::audit;

const std::filesystem::path kName = "fuzz.ndjson";

void write_and_edit(std::string_view input) {
  std::string log;
  size_t appended = 0;
  Clock fixed = [] { return int64_t{1736935864}; };
  for (size_t start = 0; start < input.size();) {
    size_t end = std::min(input.find('\n', start), input.size());
    auto record = nlohmann::json::parse(input.substr(start, end - start), nullptr, false);
    start = end + 1;
    if (!record.is_object()) continue;
    auto head = chain_head_of(log, kName);
    if (!head.ok()) std::abort();
    auto line = chained_line(std::move(record), *head, fixed, kName);
    if (!line.ok()) std::abort();
    log += *line;
    ++appended;
  }
  VerifyReport report = verify_log_bytes(log);
  if (!report.ok || report.records != appended) std::abort();
  if (log.empty()) return;
  // Change one byte, chosen by the input; a change before the last line must be found.
  size_t at = std::hash<std::string_view>{}(input) % log.size();
  log[at] = static_cast<char>(log[at] ^ 0x01);
  size_t last_line = log.rfind('\n', log.size() - 2);
  last_line = last_line == std::string::npos ? 0 : last_line + 1;
  VerifyReport after = verify_log_bytes(log);
  if (after.ok != after.problem.empty() || after.ok != (after.bad_line == 0)) std::abort();
  if (at < last_line && after.ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  write_and_edit(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
