// Where a command's audit records go: --audit-log PATH, else <audit_dir>/<sandbox id>.ndjson when
// `audit = true`, else nowhere.
#pragma once

#include <optional>
#include <string>

#include "audit/writer.h"
#include "context/context.h"
#include "core/result.h"

namespace tnk::sandbox {

// A relative `flag_path` is taken from ctx.cwd. With `project_dir` (the sandbox's project, which the
// sandbox can write), a log inside it is refused with a usage error (security review L6); the log's
// parents are then reached without following symbolic links (audit::AuditWriter::open).
Result<std::optional<audit::AuditWriter>> open_audit(Context& ctx, const std::string& flag_path, const std::string& id,
                                                     const std::filesystem::path& project_dir = {});

// Appends. A record that cannot be written is counted in the writer (the session it describes is
// not cut short), and audit_outcome then makes the command fail for it.
void audit_append(std::optional<audit::AuditWriter>& writer, nlohmann::json record);

// Fails (exit 1) when a record of this command could not be written, naming the log and the first
// error: a lost record is never silent (docs/audit-format.md).
Status audit_outcome(const std::optional<audit::AuditWriter>& writer);

// A command's one record: open_audit, audit_append and audit_outcome together.
Status audit_record(Context& ctx, const std::string& flag_path, const std::string& id,
                    const std::filesystem::path& project_dir, nlohmann::json record);

}  // namespace tnk::sandbox
