// libFuzzer target for the audit log's hash chain (docs/audit-format.md): the input's lines that are JSON
// objects are appended by the real AuditWriter to a fresh log (in $TMPDIR), which must verify with one
// record per line; then one byte of the log, chosen by the input, is changed: unless the change is in the
// last line (which nothing after it vouches for), verify_log must find it. The files are under 6 % of its
// time (docs/reliability.md, fuzzing); audit_verify_fuzz.cc feeds the readers raw bytes.
// Build and run: scripts/fuzz.sh SECONDS audit_chain (tests/fuzz/CMakeLists.txt builds it).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "audit/verify.h"
#include "audit/writer.h"
#include "core/files.h"
#include "core/unique_fd.h"

namespace {

using namespace tnk;
using namespace tnk::audit;

// The written log's directory: one per process, created by the writer and removed after each input.
std::filesystem::path log_dir() {
  return std::filesystem::temp_directory_path() / ("tnk-audit-fuzz-" + std::to_string(::getpid()));
}

void write_and_edit(std::string_view input) {
  std::filesystem::path path = log_dir() / "log.ndjson";
  size_t appended = 0;
  {
    auto writer = AuditWriter::open(path, [] { return int64_t{1736935864}; });
    if (!writer.ok()) std::abort();
    size_t start = 0;
    while (start < input.size()) {
      size_t end = std::min(input.find('\n', start), input.size());
      auto record = nlohmann::json::parse(input.substr(start, end - start), nullptr, false);
      start = end + 1;
      if (!record.is_object()) continue;
      if (!writer->append(std::move(record)).ok()) std::abort();
      ++appended;
    }
  }
  auto written = read_file(path);
  if (!written.ok()) std::abort();
  auto report = verify_log(path);
  if (!report.ok() || !report->ok || report->records != appended) std::abort();
  if (written->empty()) return;
  // Change one byte, chosen by the input; a change before the last line must be found.
  std::string edited = *written;
  size_t at = std::hash<std::string_view>{}(input) % edited.size();
  edited[at] = static_cast<char>(edited[at] ^ 0x01);
  size_t last_line = edited.rfind('\n', edited.size() - 2);
  last_line = last_line == std::string::npos ? 0 : last_line + 1;
  {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd.valid() || ::pwrite(fd.get(), &edited[at], 1, static_cast<off_t>(at)) != 1) std::abort();
  }
  auto after = verify_log(path);
  if (!after.ok()) std::abort();
  if (after->ok != after->problem.empty() || after->ok != (after->bad_line == 0)) std::abort();
  if (at < last_line && after->ok) std::abort();
}

void write_edit_and_clean(std::string_view input) {
  write_and_edit(input);
  std::filesystem::remove_all(log_dir());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  write_edit_and_clean(input);
  return 0;
}
