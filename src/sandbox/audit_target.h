// Where a command's audit records go: --audit-log PATH, else <audit_dir>/<sandbox id>.ndjson when
// `audit = true`, else nowhere.
#pragma once

#include <optional>
#include <string>

#include "audit/writer.h"
#include "context/context.h"
#include "core/result.h"

namespace tnk::sandbox {

Result<std::optional<audit::AuditWriter>> open_audit(Context& ctx, const std::string& flag_path, const std::string& id);

// Appends, reporting a failure as a warning: a full disk must not end the user's session.
void audit_append(Context& ctx, std::optional<audit::AuditWriter>& writer, nlohmann::json record);

}  // namespace tnk::sandbox
