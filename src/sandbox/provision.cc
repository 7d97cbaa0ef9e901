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

std::string fingerprint_of(const Resolved& r, const ProvisionFiles& files) {
  std::string input = "tnk-provision-1\n" + r.profile + "\n";
  for (const auto& [key, value] : r.runtime_env) input += key + "=" + value + "\n";
  for (const auto& [name, text] : files.files) {
    input += name + "\n" + std::to_string(text.size()) + "\n" + text;
  }
  return audit::sha256_hex(input);
}

}  // namespace

Result<std::optional<ProvisionFiles>> read_provision_files(Context& ctx, const Resolved& r) {
  if (!r.provision_script) return std::optional<ProvisionFiles>();
  ProvisionFiles files;
  files.script_name = r.provision_script->filename().string();
  TNK_ASSIGN_OR_RETURN(files.files[files.script_name], read_file(*r.provision_script));
  std::error_code ec;
  auto lib = specs::provision_lib_dir(ctx.paths.config_dir);
  for (const auto& entry : std::filesystem::directory_iterator(lib, ec)) {
    if (!entry.is_regular_file()) continue;
    TNK_ASSIGN_OR_RETURN(files.files["lib/" + entry.path().filename().string()], read_file(entry.path()));
  }
  return std::optional<ProvisionFiles>(std::move(files));
}

Result<std::string> provision_fingerprint(Context& ctx, const Resolved& r) {
  TNK_ASSIGN_OR_RETURN(auto files, read_provision_files(ctx, r));
  return files ? fingerprint_of(r, *files) : std::string();
}

Status provision_if_needed(Context& ctx, const Resolved& r, const Provisioner& provisioner) {
  TNK_ASSIGN_OR_RETURN(auto files, read_provision_files(ctx, r));
  if (!files) return ok_status();
  std::string fingerprint = fingerprint_of(r, *files);
  state::Store store(ctx.paths.sandboxes_dir());
  TNK_ASSIGN_OR_RETURN(FileLock running,
                       FileLock::acquire(store.file(r.id, state::kProvisionLock), std::chrono::hours(1), [&] {
                         ctx.log.info("waiting for another tnk to finish provisioning " + r.id);
                       }));
  TNK_ASSIGN_OR_RETURN(auto record, store.load(r.id));
  if (record && record->provision_fingerprint == fingerprint) {
    ctx.log.verbose("provisioning skipped: profile " + r.profile + " and its inputs are unchanged");
    return ok_status();
  }
  return provisioner(*files, fingerprint);
}

}  // namespace tnk::sandbox
