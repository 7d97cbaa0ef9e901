// The seam between the commands and the sandbox engines (docs/architecture.md, "Backends"). Two
// implementations: supervised (ns and vm: each running sandbox has its own supervisor process,
// backend/supervised/) and lima (limactl drives a Lima VM, backend/lima/). backend/registry.h opens
// the one a sandbox needs. Callers ask a backend what it can do, never which one it is.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "audit/writer.h"
#include "context/context.h"
#include "core/result.h"
#include "naming/backend_kind.h"
#include "sandbox/provision.h"
#include "sandbox/resolve.h"
#include "sandbox/session_spec.h"
#include "sandbox/start.h"
#include "state/liveness.h"

namespace tnk::sandbox {

// What a backend offers beyond the contract every backend keeps.
struct Capabilities {
  bool port_forwards = false;    // `tnk sandbox forward` into a running sandbox
  bool running_network = false;  // a running sandbox reports its network (policy, proxy, forwards)
  bool agent_ping = false;       // round trips to a guest agent (`tnk sandbox agent-ping`, bench/vm.sh)
  bool protected_paths = false;  // mounts.readonly made read-only to everything inside (docs/workspace.md)
};

// Whether a sandbox runs, as its backend sees it; `problem` says why the backend could not tell.
struct Observed {
  state::SandboxState state = state::SandboxState::kAbsent;
  std::optional<std::string> problem;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendKind kind() const = 0;
  virtual Capabilities capabilities() const = 0;

  // From the processes (supervised) or from Lima's list (lima), never from the record.
  virtual Observed observe(const Paths& paths, const std::string& id) = 0;
  // Creates the sandbox on first use, starts it, and returns once it is ready. `audit_log` (may be
  // empty) gets the sandbox's network records for as long as it runs.
  virtual Result<StartOutcome> ensure_running(Context& ctx, const Resolved& resolved,
                                              const std::filesystem::path& audit_log) = 0;
  // Runs the profile's provisioning when it is needed (sandbox/provision.h says when).
  virtual Status provision_if_needed(Context& ctx, const Resolved& resolved, const ProvisionRequest& request,
                                     std::optional<audit::AuditWriter>& audit) = 0;
  // One session; returns the command's own exit status.
  virtual Result<int> run_session(Context& ctx, const Resolved& resolved, const SessionSpec& spec,
                                  std::optional<audit::AuditWriter>& audit) = 0;
  // Graceful, then forced after `grace`. Thread-safe: it logs only through `log`.
  virtual Status stop(const Paths& paths, const std::string& id, std::chrono::milliseconds grace, Log& log) = 0;
  // Removes what the sandbox keeps outside its state directory, once stopped; the caller removes
  // the state directory.
  virtual Status remove_outside_state(const std::string& id, Log& log) = 0;
  // `tnk sandbox start -n`: what a start would do, changing nothing.
  virtual Result<StartPlan> start_plan(Context& ctx, const Resolved& resolved) = 0;
  // What this backend cannot enforce of the sandbox's network policy.
  virtual std::vector<std::string> network_limits(const Resolved& resolved) const = 0;
};

}  // namespace tnk::sandbox
