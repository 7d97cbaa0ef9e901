#include "state/record.h"

#include "core/json_fields.h"
#include "state/layout.h"

namespace tnk::state {
namespace {

nlohmann::json optional_int(const std::optional<int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

constexpr const char* kCorruptHint =
    "`tnk sandbox delete --yes` removes the sandbox and its record; your project files are not touched";

Error corrupt(const std::filesystem::path& source, const std::string& why) {
  return failed("sandbox record " + source.string() + " is corrupt: " + why, kCorruptHint);
}

}  // namespace

nlohmann::json record_to_json(const SandboxRecord& r) {
  nlohmann::json j = {{"schema", kRecordSchema},
                      {"id", r.id},
                      {"backend", to_string(r.backend)},
                      {"project_dir", r.project_dir.string()},
                      {"profile", r.profile},
                      {"mount_point", r.mount_point},
                      {"image_id", r.image_id},
                      {"provision_fingerprint", r.provision_fingerprint},
                      {"provision_inputs_fingerprint", r.provision_inputs_fingerprint},
                      {"provision_token", r.provision_token},
                      {"created_at", r.created_at},
                      {"started_at", optional_int(r.started_at)},
                      {"stopped_at", optional_int(r.stopped_at)}};
  if (!r.parent.empty()) j["parent"] = r.parent;
  return j;
}

Result<SandboxRecord> record_from_json_text(const std::string& text, const std::filesystem::path& source) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return corrupt(source, "not a JSON object");
  JsonFields f(j, "sandbox record " + source.string() + " is corrupt", kCorruptHint);
  TNK_ASSIGN_OR_RETURN(long long schema, f.integer("schema", 1));
  if (schema > kRecordSchema) {
    return failed(
        "sandbox record " + source.string() + " was written by a newer tnk (schema " + std::to_string(schema) + ")",
        "upgrade tnk");
  }
  SandboxRecord r;
  TNK_ASSIGN_OR_RETURN(r.id, f.string("id"));
  TNK_ASSIGN_OR_RETURN(std::string backend, f.string("backend"));
  auto kind = parse_backend_kind(backend);
  if (!kind || *kind == BackendKind::kAuto) return f.error("backend", "names an unknown backend '" + backend + "'");
  r.backend = *kind;
  TNK_ASSIGN_OR_RETURN(std::string project, f.string("project_dir"));
  r.project_dir = project;
  TNK_ASSIGN_OR_RETURN(r.profile, f.string("profile"));
  TNK_ASSIGN_OR_RETURN(r.mount_point, f.string("mount_point"));
  TNK_ASSIGN_OR_RETURN(r.image_id, f.optional_string("image_id"));
  TNK_ASSIGN_OR_RETURN(r.provision_fingerprint, f.optional_string("provision_fingerprint"));
  TNK_ASSIGN_OR_RETURN(r.provision_inputs_fingerprint, f.optional_string("provision_inputs_fingerprint"));
  TNK_ASSIGN_OR_RETURN(r.provision_token, f.optional_boolean("provision_token", false));
  TNK_ASSIGN_OR_RETURN(r.created_at, f.integer("created_at"));
  if (f.has("started_at")) {
    TNK_ASSIGN_OR_RETURN(r.started_at, f.integer("started_at"));
  }
  if (f.has("stopped_at")) {
    TNK_ASSIGN_OR_RETURN(r.stopped_at, f.integer("stopped_at"));
  }
  TNK_ASSIGN_OR_RETURN(r.parent, f.optional_string("parent"));
  return r;
}

}  // namespace tnk::state
