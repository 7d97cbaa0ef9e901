#include "state/record.h"

#include "state/layout.h"

namespace tnk::state {
namespace {

nlohmann::json optional_int(const std::optional<int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

Error corrupt(const std::filesystem::path& source, const std::string& why) {
  return failed("sandbox record " + source.string() + " is corrupt: " + why,
                "`tnk sandbox delete --yes` removes the sandbox and its record; your project files are not touched");
}

}  // namespace

nlohmann::json record_to_json(const SandboxRecord& r) {
  return {{"schema", kRecordSchema},
          {"id", r.id},
          {"backend", to_string(r.backend)},
          {"project_dir", r.project_dir.string()},
          {"profile", r.profile},
          {"mount_point", r.mount_point},
          {"image_id", r.image_id},
          {"provision_fingerprint", r.provision_fingerprint},
          {"created_at", r.created_at},
          {"started_at", optional_int(r.started_at)},
          {"stopped_at", optional_int(r.stopped_at)}};
}

Result<SandboxRecord> record_from_json_text(const std::string& text, const std::filesystem::path& source) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return corrupt(source, "not a JSON object");
  if (!j.contains("schema") || !j["schema"].is_number_integer()) return corrupt(source, "no schema number");
  if (j["schema"].get<int>() < 1) return corrupt(source, "schema must be 1 or more");
  if (j["schema"].get<int>() > kRecordSchema) {
    return failed("sandbox record " + source.string() + " was written by a newer tnk (schema " +
                      std::to_string(j["schema"].get<int>()) + ")",
                  "upgrade tnk");
  }
  SandboxRecord r;
  auto need_string = [&](const char* key, std::string& out) -> Status {
    if (!j.contains(key) || !j[key].is_string()) return corrupt(source, std::string("missing string '") + key + "'");
    out = j[key].get<std::string>();
    return ok_status();
  };
  std::string project, backend;
  TNK_RETURN_IF_ERROR(need_string("id", r.id));
  TNK_RETURN_IF_ERROR(need_string("backend", backend));
  auto kind = parse_backend_kind(backend);
  if (!kind || *kind == BackendKind::kAuto) return corrupt(source, "unknown backend '" + backend + "'");
  r.backend = *kind;
  TNK_RETURN_IF_ERROR(need_string("project_dir", project));
  TNK_RETURN_IF_ERROR(need_string("profile", r.profile));
  TNK_RETURN_IF_ERROR(need_string("mount_point", r.mount_point));
  r.project_dir = project;
  if (j.contains("image_id") && j["image_id"].is_string()) r.image_id = j["image_id"].get<std::string>();
  if (j.contains("provision_fingerprint") && j["provision_fingerprint"].is_string()) {
    r.provision_fingerprint = j["provision_fingerprint"].get<std::string>();
  }
  if (!j.contains("created_at") || !j["created_at"].is_number_integer()) return corrupt(source, "no created_at");
  r.created_at = j["created_at"].get<int64_t>();
  if (j.contains("started_at") && j["started_at"].is_number_integer()) r.started_at = j["started_at"].get<int64_t>();
  if (j.contains("stopped_at") && j["stopped_at"].is_number_integer()) r.stopped_at = j["stopped_at"].get<int64_t>();
  return r;
}

}  // namespace tnk::state
