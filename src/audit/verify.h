// verify_log: walks an audit log line by line and reports the first record that breaks the chain
// (docs/audit-format.md, "Verifying"). Streams the file; never holds more than one line.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/result.h"

namespace tnk::audit {

struct VerifyReport {
  size_t records = 0;  // records that checked out (all of them when ok, those before bad_line when not)
  bool ok = true;
  size_t bad_line = 0;    // 1-based line number of the first broken record; 0 when ok
  std::string problem;    // e.g. "record 3 missing: seq jumps from 2 to 4"; empty when ok
  std::string last_hash;  // sha256 of the last good line (64 zeros for an empty log): keep a copy
                          // elsewhere to detect later removal of trailing records
};

// Fails only when the file cannot be read; a damaged log is an ok Result with report.ok == false.
// An edited record shows at the NEXT line (its prev no longer matches), unless the edit changed
// seq or prev themselves, which shows at the edited line.
Result<VerifyReport> verify_log(const std::filesystem::path& path);

// The same check, and every line that is a JSON object goes to `on_record`, in order, also the
// lines after the first broken one (a reader of the log, `tnk audit summary`, still sees them; the
// report says where the chain stops vouching for them). Lines that do not parse are skipped.
using RecordSink = std::function<void(const nlohmann::json& record)>;
Result<VerifyReport> verify_log(const std::filesystem::path& path, const RecordSink& on_record);

// The same checks on a log held in memory, split into the pieces the file's reads would give: the fuzz
// targets check every reader on every input without a file per input.
VerifyReport verify_log_bytes(std::string_view log);
VerifyReport verify_log_bytes(std::string_view log, const RecordSink& on_record);

// {"bad_line": null|N, "last_hash": "...", "ok": bool, "problem": null|"...", "records": N}
nlohmann::json to_json(const VerifyReport& report);

}  // namespace tnk::audit
