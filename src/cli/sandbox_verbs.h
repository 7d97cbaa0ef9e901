// Shared pieces of the `tnk sandbox` verbs.
#pragma once

#include <string>

#include "cli/command.h"
#include "sandbox/resolve.h"

namespace tnk::cli {

struct SandboxFlags {
  std::string profile;
  std::string backend;
  sandbox::ResolveOptions resolve_options() const;
};

// Runs `action` on a backend. No backend is built yet, so this fails with the error that names
// what is missing; it is the single place the backends will plug into.
Status backend_action(const std::string& backend_name, const std::string& action);

// Resolves the current project's sandbox for a command that will run it (start, shell, exec, run)
// and prints its notes once: fallbacks, a down endpoint, a backend weaker than vm.
Result<sandbox::Resolved> resolve_to_run(Context& ctx, const sandbox::ResolveOptions& options);

void add_sandbox_flags(CLI::App& command, SandboxFlags& flags, bool with_backend);
void add_session_commands(CLI::App& sandbox, CommandTable& table);            // start, shell, exec
void add_sandbox_lifecycle_commands(CLI::App& sandbox, CommandTable& table);  // stop, delete

}  // namespace tnk::cli
