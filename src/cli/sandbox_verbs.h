// Shared pieces of the `tnk sandbox` verbs.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "audit/writer.h"

#include "cli/command.h"
#include "sandbox/resolve.h"

namespace tnk::cli {

struct SandboxFlags {
  std::string profile;
  std::string backend;
  std::optional<NetworkPolicy> network;
  sandbox::ResolveOptions resolve_options() const;
};

// Starts the resolved sandbox when it is not running (creating it on first use) and provisions it
// when its profile's inputs changed. Writes sandbox_start to `audit` when it started it.
Status start_and_provision(Context& ctx, sandbox::Resolved& resolved, std::optional<audit::AuditWriter>& audit);

// Stops one sandbox, whatever its backend. Thread-safe: it logs only through `log`.
Status stop_supervised(const Paths& paths, const std::string& id, const std::string& backend,
                       std::chrono::milliseconds grace, Log& log);
// After a stop: sandbox_stop in the audit log when `audit = true`, and the message.
void record_stop(Context& ctx, const std::string& id, const std::string& reason);

// Resolves the current project's sandbox for a command that will run it (start, shell, exec, run)
// and prints its notes once: fallbacks, a down endpoint, a backend weaker than vm.
Result<sandbox::Resolved> resolve_to_run(Context& ctx, const sandbox::ResolveOptions& options);

void add_sandbox_flags(CLI::App& command, SandboxFlags& flags, bool with_backend);
void add_session_commands(CLI::App& sandbox, CommandTable& table);            // start, shell, exec
void add_sandbox_lifecycle_commands(CLI::App& sandbox, CommandTable& table);  // stop, delete
void add_network_commands(CLI::App& sandbox, CommandTable& table);            // forward
void add_debug_commands(CLI::App& sandbox, CommandTable& table);              // agent-ping (hidden)

}  // namespace tnk::cli
