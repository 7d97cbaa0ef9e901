#include "sandbox/audit_target.h"

#include <sys/stat.h>

#include "workspace/workspace.h"

namespace tnk::sandbox {
namespace {

// The sandbox can write its project: a log there could be rewritten, or a parent swapped for a link
// to send root's writes elsewhere (security review L6). Compares the identity of each existing
// directory on the way, so another name for the project (a bind mount) is caught too.
Status refuse_inside_project(const std::filesystem::path& log, const std::filesystem::path& project_dir) {
  struct stat project {};
  if (project_dir.empty() || ::stat(project_dir.c_str(), &project) != 0) return ok_status();
  for (std::filesystem::path dir = log.parent_path();; dir = dir.parent_path()) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) == 0 && st.st_dev == project.st_dev && st.st_ino == project.st_ino) {
      return usage_error("refusing audit log " + log.string() + ": it is inside the project directory " +
                             project_dir.string() + ", which the sandbox can write",
                         "give --audit-log (or audit_dir in tnk.toml) a path outside the project, such as "
                         "~/.local/state/tnk/audit/" +
                             log.filename().string());
    }
    if (dir == dir.parent_path()) return ok_status();
  }
}

}  // namespace

Result<std::optional<audit::AuditWriter>> open_audit(Context& ctx, const std::string& flag_path, const std::string& id,
                                                     const std::filesystem::path& project_dir) {
  std::filesystem::path path;
  if (!flag_path.empty()) {
    path = std::filesystem::path(flag_path).is_absolute() ? std::filesystem::path(flag_path) : ctx.cwd / flag_path;
  } else {
    TNK_ASSIGN_OR_RETURN(const Config* config, ctx.config());
    if (!config->audit.value) return std::optional<audit::AuditWriter>();
    path = config->audit_dir_path / (id + ".ndjson");
  }
  path = path.lexically_normal();
  TNK_RETURN_IF_ERROR(refuse_inside_project(path, project_dir));
  TNK_ASSIGN_OR_RETURN(auto writer, audit::AuditWriter::open(path));
  return std::optional<audit::AuditWriter>(std::move(writer));
}

void audit_append(std::optional<audit::AuditWriter>& writer, nlohmann::json record) {
  if (writer) (void)writer->append(std::move(record));
}

Status audit_outcome(const std::optional<audit::AuditWriter>& writer) {
  if (!writer || writer->unwritten() == 0) return ok_status();
  const int n = writer->unwritten();
  const std::string path = writer->path().string();
  return failed(std::to_string(n) + (n == 1 ? " audit record was" : " audit records were") +
                    " not written: " + writer->first_failure()->message,
                "the log still ends with a complete record (`tnk audit verify " + path +
                    "`); free space on its file system, or fix the error, and run the command again");
}

Status audit_record(Context& ctx, const std::string& flag_path, const std::string& id,
                    const std::filesystem::path& project_dir, nlohmann::json record) {
  TNK_ASSIGN_OR_RETURN(auto audit, open_audit(ctx, flag_path, id, project_dir));
  audit_append(audit, std::move(record));
  return audit_outcome(audit);
}

}  // namespace tnk::sandbox
