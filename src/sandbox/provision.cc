#include "sandbox/provision.h"

#include <chrono>

#include "audit/sha256.h"
#include "core/file_lock.h"
#include "core/files.h"
#include "specs/profiles.h"
#include "state/layout.h"
#include "state/store.h"

namespace tnk::sandbox {
namespace {

// The runtime values the endpoint reported rather than the user's config.
bool from_endpoint(const Resolved& r, const std::string& key) {
  return (key == "TNK_MODEL_NAME" && r.model.source == "server") ||
         (key == "TNK_CTX_WINDOW" && r.model.context_source == "server");
}

std::string fingerprint_of(const Resolved& r, const ProvisionFiles& files, bool with_endpoint_values) {
  std::string input = "tnk-provision-1\n" + r.profile + "\n";
  for (const auto& [key, value] : r.runtime_env) {
    if (with_endpoint_values || !from_endpoint(r, key)) input += key + "=" + value + "\n";
  }
  for (const auto& [name, text] : files.files) {
    input += name + "\n" + std::to_string(text.size()) + "\n" + text;
  }
  return audit::sha256_hex(input);
}

Status save_token_seen(Context& ctx, const state::Store& store, const std::string& id, bool token) {
  TNK_ASSIGN_OR_RETURN(std::optional<FileLock> lock, store.lock_existing(id, ctx.log));
  if (!lock) return ok_status();  // deleted meanwhile
  TNK_ASSIGN_OR_RETURN(auto record, store.load(id));
  if (!record || record->provision_token == token) return ok_status();
  record->provision_token = token;
  return store.save(*record);
}

// Why a run is needed now, and whether it is one the script must not skip; empty: none is.
struct Reason {
  std::string why;
  bool forced = false;
};

Result<Reason> reason_to_run(Context& ctx, const Resolved& r, const std::optional<state::SandboxRecord>& record,
                             const ProvisionFingerprint& fingerprint, const ProvisionRequest& request,
                             const Provisioner& provisioner) {
  if (request.reprovision) return Reason{"--reprovision", true};
  if (!record || record->provision_fingerprint.empty()) return Reason{"first run"};
  if (record->provision_fingerprint != fingerprint.full) {
    bool only_endpoint = record->provision_inputs_fingerprint == fingerprint.inputs;
    if (!(request.sandbox_was_running && only_endpoint)) return Reason{"profile " + r.profile + " changed"};
    ctx.log.note("the endpoint now reports another model or context window (" + r.model.model_name + ", " +
                 std::to_string(r.model.context_window) + " tokens) than " + r.id +
                 " was provisioned for; a running sandbox is not re-provisioned for that alone: run "
                 "`tnk sandbox start --reprovision` to apply it");
    return Reason{};
  }
  // Only a token the last run left can be missing: a script without provision-lib never writes one.
  if (request.check_guest_token && record->provision_token && provisioner.guest_token_present) {
    TNK_ASSIGN_OR_RETURN(bool present, provisioner.guest_token_present());
    if (!present) return Reason{std::string(kGuestProvisionToken) + " is gone", true};
  }
  ctx.log.verbose("provisioning skipped: profile " + r.profile + " and its inputs are unchanged");
  return Reason{};
}

}  // namespace

std::vector<ProvisionPhase> provision_phases(const ProvisionFiles& files) {
  std::vector<ProvisionPhase> phases;
  if (!files.root_script_name.empty()) phases.push_back({session::Identity::kRoot, files.root_script_name});
  if (!files.script_name.empty()) phases.push_back({session::Identity::kAgent, files.script_name});
  return phases;
}

Result<std::optional<ProvisionFiles>> read_provision_files(Context& ctx, const Resolved& r) {
  if (!r.provision_script && !r.provision_root_script) return std::optional<ProvisionFiles>();
  ProvisionFiles files;
  for (auto [script, name] : {std::pair{&r.provision_root_script, &files.root_script_name},
                              std::pair{&r.provision_script, &files.script_name}}) {
    if (!*script) continue;
    *name = (*script)->filename().string();
    TNK_ASSIGN_OR_RETURN(files.files[*name], read_file(**script));
  }
  std::error_code ec;
  auto lib = specs::provision_lib_dir(ctx.paths.config_dir);
  for (const auto& entry : std::filesystem::directory_iterator(lib, ec)) {
    if (!entry.is_regular_file()) continue;
    TNK_ASSIGN_OR_RETURN(files.files["lib/" + entry.path().filename().string()], read_file(entry.path()));
  }
  return std::optional<ProvisionFiles>(std::move(files));
}

ProvisionFingerprint provision_fingerprint(const Resolved& r, const ProvisionFiles& files) {
  return {fingerprint_of(r, files, true), fingerprint_of(r, files, false)};
}

Result<ProvisionFingerprint> provision_fingerprint(Context& ctx, const Resolved& r) {
  TNK_ASSIGN_OR_RETURN(auto files, read_provision_files(ctx, r));
  return files ? provision_fingerprint(r, *files) : ProvisionFingerprint{};
}

Status provision_if_needed(Context& ctx, const Resolved& r, const ProvisionRequest& request,
                           const Provisioner& provisioner) {
  TNK_ASSIGN_OR_RETURN(auto files, read_provision_files(ctx, r));
  if (!files) {
    if (request.reprovision) ctx.log.note("profile " + r.profile + " has no provisioning script: nothing to run");
    return ok_status();
  }
  ProvisionFingerprint fingerprint = provision_fingerprint(r, *files);
  state::Store store(ctx.paths.sandboxes_dir());
  bool waited = false;
  TNK_ASSIGN_OR_RETURN(FileLock running,
                       FileLock::acquire(store.file(r.id, state::kProvisionLock), std::chrono::hours(1), [&] {
                         waited = true;
                         ctx.log.info("waiting for another tnk to finish provisioning " + r.id);
                       }));
  TNK_ASSIGN_OR_RETURN(auto record, store.load(r.id));
  // Whoever waited for the lock finds the run done: a forced run is not repeated for it.
  ProvisionRequest now = request;
  if (waited && record && record->provision_fingerprint == fingerprint.full) now.reprovision = false;
  TNK_ASSIGN_OR_RETURN(Reason reason, reason_to_run(ctx, r, record, fingerprint, now, provisioner));
  if (reason.why.empty()) return ok_status();
  ctx.log.verbose("provisioning " + r.id + ": " + reason.why);
  TNK_RETURN_IF_ERROR(provisioner.run(*files, fingerprint, {request.sandbox_was_running, reason.forced}));
  if (!provisioner.guest_token_present) return ok_status();
  TNK_ASSIGN_OR_RETURN(bool token, provisioner.guest_token_present());
  return save_token_seen(ctx, store, r.id, token);
}

}  // namespace tnk::sandbox
