#include "sandbox/audit_target.h"

#include "workspace/workspace.h"

namespace tnk::sandbox {

Result<std::optional<audit::AuditWriter>> open_audit(Context& ctx, const std::string& flag_path,
                                                     const std::string& id) {
  std::filesystem::path path;
  if (!flag_path.empty()) {
    path = std::filesystem::path(flag_path).is_absolute() ? std::filesystem::path(flag_path) : ctx.cwd / flag_path;
  } else {
    TNK_ASSIGN_OR_RETURN(const Config* config, ctx.config());
    if (!config->audit.value) return std::optional<audit::AuditWriter>();
    path = config->audit_dir_path / (id + ".ndjson");
  }
  TNK_ASSIGN_OR_RETURN(auto writer, audit::AuditWriter::open(path));
  return std::optional<audit::AuditWriter>(std::move(writer));
}

void audit_append(Context& ctx, std::optional<audit::AuditWriter>& writer, nlohmann::json record) {
  if (!writer) return;
  Status appended = writer->append(std::move(record));
  if (!appended.ok()) ctx.log.warn("audit log: " + appended.error().message);
}

}  // namespace tnk::sandbox
