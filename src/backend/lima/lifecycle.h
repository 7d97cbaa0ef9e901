// The lima backend from the command line: the same verbs, exit codes, audit records and
// provisioning fingerprint as the ns backend, carried out with limactl (backend/lima/ has the plan).
// Whether a lima sandbox runs is Lima's to say (`limactl list`); tnk keeps only its record and the
// instance YAML. The per-sandbox lock is held while state changes, never across a session.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "audit/writer.h"
#include "backend/lima/instances.h"
#include "backend/lima/plan.h"
#include "context/context.h"
#include "core/result.h"
#include "sandbox/backend.h"
#include "sandbox/resolve.h"
#include "sandbox/session_spec.h"
#include "sandbox/start.h"

namespace tnk::lima {

// Lima's instances, from one `limactl list`; `problem` says why limactl could not be asked.
struct LimaStates {
  std::vector<lima::Instance> instances;
  std::optional<std::string> problem;
  state::SandboxState state_of(const std::string& id) const;
};
LimaStates lima_states();

// The instance a resolved sandbox gets: its manifest, the manifest's `lima:` keys, the config's
// [sandbox] defaults for what the manifest leaves out.
Result<lima::InstanceSpec> lima_instance_spec(Context& ctx, const sandbox::Resolved& resolved);

// Creates the Lima instance on first use (from the YAML written into the state directory), starts
// it, and checks that Lima reports it Running. A failed first start removes what it created; a
// failed start of an existing sandbox changes nothing.
Result<sandbox::StartOutcome> ensure_running_lima(Context& ctx, const sandbox::Resolved& resolved);

// `limactl stop`, then `stop --force` when that fails. Thread-safe: it logs only through `log`.
Status stop_lima(const Paths& paths, const std::string& id, std::chrono::milliseconds grace, Log& log);

// `limactl delete --force` of a stopped instance (nothing when Lima has none); the caller removes
// the state directory.
Status delete_lima_instance(const std::string& id, Log& log);

// One session through `limactl shell`, with the contract's environment and audit records; returns
// the guest command's own exit status.
Result<int> run_lima_session(Context& ctx, const sandbox::Resolved& resolved, const sandbox::SessionSpec& spec,
                             std::optional<audit::AuditWriter>& audit);

// Provisioning through `limactl copy` and `limactl shell`, skipped when the fingerprint (the same
// as the ns backend's) matches the record's.
Status provision_lima_if_needed(Context& ctx, const sandbox::Resolved& resolved,
                                const sandbox::ProvisionRequest& request, std::optional<audit::AuditWriter>& audit);

// The host file a provisioning file (a script of the profile, or lib/<name>) is copied in from.
std::filesystem::path provision_host_file(Context& ctx, const std::string& relative);

// `tnk sandbox start -n`: the instance YAML and every limactl command a start would run.
Result<sandbox::StartPlan> lima_start_plan(Context& ctx, const sandbox::Resolved& resolved);

// The lima backend behind the interface every backend implements (sandbox/backend.h).
std::unique_ptr<sandbox::Backend> make_lima_backend();

}  // namespace tnk::lima
