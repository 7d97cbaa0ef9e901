// Provisioning a sandbox with its profile (ARCHITECTURE.md, "Specs, profiles and provisioning"):
// the profile's script and the shared lib copied in and run as `agent` with the runtime values,
// output live on the terminal and in the audit log, and the fingerprint that decides whether a run
// is needed kept in sandbox.json.
#pragma once

#include <optional>
#include <string>

#include "audit/writer.h"
#include "cli/context.h"
#include "core/result.h"
#include "sandbox/resolve.h"

namespace tnk::sandbox {

// sha256 of the profile, the specs revision, the script and lib contents and the injected runtime
// values. Empty when the profile has nothing to run.
Result<std::string> provision_fingerprint(Context& ctx, const Resolved& resolved);

// Runs the profile's script when its fingerprint differs from the recorded one. A failed run leaves
// the sandbox running and returns an error naming the line that failed.
Status provision_if_needed(Context& ctx, const Resolved& resolved, std::optional<audit::AuditWriter>& audit);

}  // namespace tnk::sandbox
