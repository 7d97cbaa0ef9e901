// Provisioning a sandbox with its profile (docs/architecture.md, "Provisioning"): the profile's
// script and the shared lib copied in and run with the runtime values, output live on the terminal
// and in the audit log, and the fingerprint that decides whether a run is needed kept in
// sandbox.json. This is the part every backend shares; each backend copies and runs (Provisioner).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "audit/writer.h"
#include "context/context.h"
#include "core/result.h"
#include "sandbox/resolve.h"

namespace tnk::sandbox {

// Runs the script so that a failure names its line: the ERR trap is inherited by functions (-E) and
// the script is sourced, so $BASH_SOURCE and $LINENO are the script's. The script's path is an
// argument ($0), never part of this text.
inline constexpr const char* kProvisionRunner =
    "set -E; trap 'echo \"tnk: provisioning failed at ${BASH_SOURCE[0]##*/} line ${LINENO}: ${BASH_COMMAND}\" >&2' "
    "ERR; source \"$0\"";

struct ProvisionFiles {
  std::string script_name;
  std::map<std::string, std::string> files;  // path below the guest's provisioning dir -> contents (script, lib/*)
};

// The profile's script and the shared lib; nullopt when the profile has nothing to run.
Result<std::optional<ProvisionFiles>> read_provision_files(Context& ctx, const Resolved& resolved);

// sha256 of the profile, the specs revision, the script and lib contents and the injected runtime
// values. Empty when the profile has nothing to run.
Result<std::string> provision_fingerprint(Context& ctx, const Resolved& resolved);

// Copies the files in and runs the script, writing provision_start/provision_end; the backend's part.
using Provisioner = std::function<Status(const ProvisionFiles& files, const std::string& fingerprint)>;

// Runs `provisioner` when the fingerprint differs from the recorded one, one run at a time per
// sandbox (whoever waited finds it done and skips it). A failed run leaves the sandbox running and
// returns an error naming the line that failed.
Status provision_if_needed(Context& ctx, const Resolved& resolved, const Provisioner& provisioner);

}  // namespace tnk::sandbox
