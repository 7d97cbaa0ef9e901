// sandbox.json: what tnk knows about one sandbox that does not come from its processes.
// Whether it runs is never stored here; it is read from the processes themselves.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "naming/backend_kind.h"

namespace tnk::state {

struct SandboxRecord {
  std::string id;  // tnk-<project>
  BackendKind backend = BackendKind::kNs;
  std::filesystem::path project_dir;  // canonical host path of the project
  std::string profile;
  std::string mount_point;            // guest path of the project
  std::string image_id;               // the base image it was created from
  std::string provision_fingerprint;  // empty until a provisioning run succeeded
  // The same without what the endpoint reports (sandbox/provision.h): empty in records of older tnk.
  std::string provision_inputs_fingerprint;
  bool provision_token = false;  // the last run left provision-lib's token inside (kGuestProvisionToken)
  int64_t created_at = 0;        // Unix seconds
  std::optional<int64_t> started_at;
  std::optional<int64_t> stopped_at;
  // A fork (`tnk sandbox fork`): the sandbox it was forked from. A fork is always in review mode.
  std::string parent;
};

nlohmann::json record_to_json(const SandboxRecord& record);
// `source` names the file in errors.
Result<SandboxRecord> record_from_json_text(const std::string& text, const std::filesystem::path& source);

}  // namespace tnk::state
