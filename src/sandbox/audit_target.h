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

// Appends, reporting a failure as a warning: a full disk must not end the user's session.
void audit_append(Context& ctx, std::optional<audit::AuditWriter>& writer, nlohmann::json record);

}  // namespace tnk::sandbox
