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
#include "session/messages.h"

namespace tnk::sandbox {

// Runs the script so that a failure names its line: the ERR trap is inherited by functions (-E) and
// the script is sourced, so $BASH_SOURCE and $LINENO are the script's. The script's path is an
// argument ($0), never part of this text.
inline constexpr const char* kProvisionRunner =
    "set -E; trap 'echo \"tnk: provisioning failed at ${BASH_SOURCE[0]##*/} line ${LINENO}: ${BASH_COMMAND}\" >&2' "
    "ERR; source \"$0\"";

// A run has up to two phases (docs/specs.md, "Two phases"): the root phase (<profile>.root.sh) as root
// inside, then the agent phase (<profile>.sh) as the agent without any way to become root. Each name is
// empty when the profile has no such script.
struct ProvisionFiles {
  std::string root_script_name;
  std::string script_name;
  std::map<std::string, std::string> files;  // path below the guest's provisioning dir -> contents (scripts, lib/*)
};

// The phases of a run in their order, root first, each with the identity it runs as.
struct ProvisionPhase {
  session::Identity identity;
  std::string script_name;
};
std::vector<ProvisionPhase> provision_phases(const ProvisionFiles& files);

// The profile's scripts and the shared lib; nullopt when the profile has nothing to run.
Result<std::optional<ProvisionFiles>> read_provision_files(Context& ctx, const Resolved& resolved);

// What decides whether a run is needed. `full`: sha256 of the profile, the script and lib contents and
// the injected runtime values (the specs revision among them). `inputs`: the same without the values
// the endpoint reported (the model's name and context window), which the sandbox can change itself
// (an Ollama `/api/copy` makes a new newest model): those never re-provision a running sandbox on
// their own (security review M3).
struct ProvisionFingerprint {
  std::string full;
  std::string inputs;
};

ProvisionFingerprint provision_fingerprint(const Resolved& resolved, const ProvisionFiles& files);
// The same read from the profile's files; both empty when the profile has nothing to run.
Result<ProvisionFingerprint> provision_fingerprint(Context& ctx, const Resolved& resolved);

// How the command that provisions came: whether agent sessions may be running, and what the user asked.
struct ProvisionRequest {
  bool sandbox_was_running = false;  // it ran before this command, so agent processes may be running
  bool reprovision = false;          // `start --reprovision`: run whatever the fingerprint says
  bool check_guest_token = false;    // `start`: a provision.lock deleted inside asks for a run (the original's way)
};

// What a run does before the script.
struct ProvisionRun {
  bool end_agent_processes = false;  // every process of the sandbox's `agent` ends first
  bool forget_guest_tokens = false;  // provision-lib's tokens are removed, so the script skips nothing
};

// The backend's part.
struct Provisioner {
  // Copies the files in and runs the script, writing provision_start/provision_end.
  std::function<Status(const ProvisionFiles& files, const ProvisionFingerprint& fingerprint, const ProvisionRun& run)>
      run;
  // Whether the sandbox still holds the token its last run left (kGuestProvisionToken).
  std::function<Result<bool>()> guest_token_present;
};

// provision-lib.sh's token inside, as the original names it: deleting it asks `start` for a run.
inline constexpr const char* kGuestProvisionToken = "/home/agent/.local/state/tnk/provision.lock";
// Removes that token and the per-profile ones beside it (provision-<profile>.lock).
inline constexpr const char* kForgetGuestTokens = "rm -f -- \"$1\" \"${1%.lock}\"-*.lock";

// Runs the provisioner when the fingerprint differs from the recorded one (a running sandbox: when its
// inputs differ), or when asked, one run at a time per sandbox (whoever waited finds it done and skips
// it). A failed run leaves the sandbox running and returns an error naming the line that failed.
Status provision_if_needed(Context& ctx, const Resolved& resolved, const ProvisionRequest& request,
                           const Provisioner& provisioner);

}  // namespace tnk::sandbox
