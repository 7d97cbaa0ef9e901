// Starting and stopping supervised sandboxes (ns and vm): each running sandbox is one supervisor
// process (supervisor/), asked over its control socket. The per-sandbox lock is held only while
// state changes: never across a session, and never while provisioning runs (that has its own lock).
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "context/context.h"
#include "core/result.h"
#include "sandbox/resolve.h"
#include "sandbox/start.h"

namespace tnk::supervised {

// Creates the sandbox on first use (building the image when needed), recovers a broken one (its
// upper layer is kept), starts its supervisor, and returns once it is ready. `audit_log` (may be
// empty) gets the sandbox's network records for as long as it runs.
Result<sandbox::StartOutcome> ensure_running(Context& ctx, const sandbox::Resolved& resolved,
                                             const std::filesystem::path& audit_log);

// Asks the supervisor to stop the sandbox (graceful, then forced after `grace`) and waits for it to
// exit. A broken sandbox (supervisor gone) is cleaned up instead. Safe to run for several sandboxes
// at once from threads, each with its own `log`.
Status stop_sandbox(const Paths& paths, const std::string& id, std::chrono::milliseconds grace, Log& log);

// Removes what a dead supervisor left behind (pid file, control socket, cgroups).
void clean_after_crash(const Paths& paths, const std::string& id);

}  // namespace tnk::supervised
