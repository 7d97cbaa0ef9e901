// The sandbox's stored network rules (state/layout.h kNetworkRulesFile): what `tnk sandbox allow` and
// `deny` recorded, for the running supervisor and every later start. The caller holds the sandbox's lock.
#pragma once

#include <filesystem>
#include <vector>

#include "core/result.h"
#include "net/live_policy.h"

namespace tnk::sandbox {

// The rules in force now (expired ones dropped); none when the file does not exist.
Result<std::vector<net::LiveRule>> load_live_rules(const std::filesystem::path& state_dir);
Status save_live_rules(const std::filesystem::path& state_dir, const std::vector<net::LiveRule>& rules);

}  // namespace tnk::sandbox
