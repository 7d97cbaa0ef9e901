// Shared pieces of the `tnk sandbox` verbs.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "cli/command.h"
#include "sandbox/resolve.h"

namespace tnk::cli {

struct SandboxFlags {
  std::string profile;
  std::string backend;
  std::optional<NetworkPolicy> network;
  bool review = false;  // start --review
  sandbox::ResolveOptions resolve_options() const;
};

void add_sandbox_flags(CLI::App& command, SandboxFlags& flags, bool with_backend);
void add_session_commands(CLI::App& sandbox, CommandTable& table);            // start, shell, exec
void add_sandbox_lifecycle_commands(CLI::App& sandbox, CommandTable& table);  // stop, delete
// forward, allow, deny, policy, pending, approve
void add_network_commands(CLI::App& sandbox, CommandTable& table);
void add_pending_command(CLI::App& sandbox, CommandTable& table);  // pending (of add_network_commands)
void add_debug_commands(CLI::App& sandbox, CommandTable& table);   // agent-ping (hidden)
void add_review_commands(CLI::App& sandbox, CommandTable& table);  // diff, apply, discard
// checkpoint (and checkpoint rm), checkpoints, restore, fork
void add_checkpoint_commands(CLI::App& sandbox, CommandTable& table);

// The current project's sandbox id, worked out from the cwd alone: stop, delete and the review verbs
// need nothing else, and must work even when the sandbox's record is corrupt (resolve() would refuse it).
Result<std::string> current_sandbox_id(Context& ctx);

}  // namespace tnk::cli
