// The list of sandboxes with their state read from the processes: shared by `tnk sandbox ls`
// and the bare `tnk` status.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "context/context.h"

namespace tnk::cli {

struct SandboxRow {
  std::string name, status, backend, profile, mount, project;
};

Result<std::vector<SandboxRow>> list_sandboxes(Context& ctx);
nlohmann::json to_json(const std::vector<SandboxRow>& rows);
std::string render_table(const std::vector<SandboxRow>& rows);

}  // namespace tnk::cli
