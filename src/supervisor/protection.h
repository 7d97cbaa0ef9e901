// What a sandbox protects at start (docs/workspace.md): the manifest's read-only project paths, and for
// a linked worktree its `.git` file and the main repository's common git dir, shared at its own path
// with the same `.git/...` paths read-only there. Planned here from the host's files, made read-only by
// the engine, recorded (state/protection.h) for inspect, sessions and stop.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/result.h"
#include "state/protection.h"
#include "supervisor/config.h"

namespace tnk::supervisor {

struct ProtectionPlan {
  std::vector<state::ProtectedPath> paths;  // every path, with what it is now
  std::vector<std::string> project_binds;   // project-relative: the kProtected ones of the project
  std::filesystem::path git_common_dir;     // empty unless a linked worktree's is shared
  std::vector<std::string> git_dir_binds;   // relative to git_common_dir
  std::vector<std::string> notes;
};

ProtectionPlan plan_protection(const SupervisorConfig& config);

// After the engine applied `plan`: writes the record and returns the notes for start's output.
Result<std::vector<std::string>> record_protection(const SupervisorConfig& config, const ProtectionPlan& plan);

}  // namespace tnk::supervisor
