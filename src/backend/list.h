// The list of sandboxes with their state as each one's backend sees it: shared by `tnk sandbox ls`
// and the bare `tnk` status.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "context/context.h"

namespace tnk::backend {

struct SandboxRow {
  std::string name, status, backend, profile, mount, project;
  std::string parent;  // a fork's: the sandbox it was forked from
};

Result<std::vector<SandboxRow>> list_sandboxes(Context& ctx);
nlohmann::json to_json(const std::vector<SandboxRow>& rows);
std::string render_table(const std::vector<SandboxRow>& rows);

}  // namespace tnk::backend
