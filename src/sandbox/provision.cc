#include "sandbox/provision.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "audit/events.h"
#include "audit/sha256.h"
#include "core/file_lock.h"
#include "core/files.h"
#include "sandbox/audit_target.h"
#include "sandbox/provision_output.h"
#include "sandbox/registries.h"
#include "sandbox/session_run.h"
#include "specs/profiles.h"
#include "state/layout.h"
#include "state/store.h"

namespace tnk::sandbox {
namespace {

// Where the script and lib go inside: the layout the scripts expect ($(dirname "$0")/lib/...).
constexpr const char* kGuestDir = "/tmp/tnk-provision";

// Runs the script so that a failure names its line: the ERR trap is inherited by functions (-E) and
// the script is sourced, so $BASH_SOURCE and $LINENO are the script's. The script's path is an
// argument ($0), never part of this text.
constexpr const char* kRunner =
    "set -E; trap 'echo \"tnk: provisioning failed at ${BASH_SOURCE[0]##*/} line ${LINENO}: ${BASH_COMMAND}\" >&2' "
    "ERR; source \"$0\"";

struct ProvisionFiles {
  std::string script_name;
  std::map<std::string, std::string> files;  // guest-relative path -> contents (script and lib/*)
};

Result<std::optional<ProvisionFiles>> read_files(Context& ctx, const Resolved& r) {
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

std::string fingerprint_of(const Resolved& r, const ProvisionFiles& files) {
  std::string input = "tnk-provision-1\n" + r.profile + "\n";
  for (const auto& [key, value] : r.runtime_env) input += key + "=" + value + "\n";
  for (const auto& [name, text] : files.files) {
    input += name + "\n" + std::to_string(text.size()) + "\n" + text;
  }
  return audit::sha256_hex(input);
}

Result<UniqueFd> memory_file(const std::string& contents) {
  UniqueFd fd(::memfd_create("tnk-provision-file", MFD_CLOEXEC));
  if (!fd.valid()) return sys_error(errno, "memfd_create");
  TNK_RETURN_IF_ERROR(write_all(fd.get(), contents, "provisioning file"));
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) return sys_error(errno, "lseek");
  return fd;
}

// Copies one file in by running `cat` inside with the contents on its stdin.
Status copy_in(Context& ctx, const Resolved& r, const std::string& name, const std::string& contents) {
  std::string path = std::string(kGuestDir) + "/" + name;
  SessionSpec spec;
  spec.argv = {"sh", "-c", "mkdir -p \"$(dirname \"$1\")\" && cat > \"$1\"", "sh", path};
  spec.identity = session::Identity::kProvision;
  TNK_ASSIGN_OR_RETURN(UniqueFd in, memory_file(contents));
  session::ClientOptions options;
  options.in_fd = in.get();
  std::optional<audit::AuditWriter> no_audit;
  TNK_ASSIGN_OR_RETURN(int code, run_session(ctx, r, spec, no_audit, options));
  if (code != 0) return failed("copying " + name + " into " + r.id + " failed (exit " + std::to_string(code) + ")");
  return ok_status();
}

Status run_script(Context& ctx, const Resolved& r, const ProvisionFiles& files, const std::string& fingerprint,
                  std::optional<audit::AuditWriter>& audit) {
  NetworkPolicy policy = r.manifest.provision_network.value_or(NetworkPolicy::kAllowlist);
  std::vector<std::string> allow;
  if (policy == NetworkPolicy::kAllowlist) {
    TNK_ASSIGN_OR_RETURN(allow, provision_allow_list(r.manifest.provision_allow_domains));
  }
  for (const auto& [name, text] : files.files) TNK_RETURN_IF_ERROR(copy_in(ctx, r, name, text));
  ctx.log.info("provisioning " + r.id + " with profile " + r.profile);
  audit_append(ctx, audit, audit::provision_start(r.id, r.profile, fingerprint));
  SessionSpec spec;
  spec.argv = {"bash", "-c", kRunner, std::string(kGuestDir) + "/" + files.script_name};
  spec.identity = session::Identity::kProvision;
  spec.egress_allow = allow;
  spec.egress_any = policy == NetworkPolicy::kOpen;
  ProvisionOutput tee(ctx, audit, r, false);
  UniqueFd no_input(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  session::ClientOptions options;
  options.in_fd = no_input.get();
  options.out_fd = STDERR_FILENO;  // progress, not the command's result: stdout stays clean
  options.tee = [&](int stream, std::string_view bytes) { tee.add(stream, bytes); };
  auto code = run_session(ctx, r, spec, audit, options);
  return tee.finish(code, fingerprint);
}

}  // namespace

Result<std::string> provision_fingerprint(Context& ctx, const Resolved& r) {
  TNK_ASSIGN_OR_RETURN(auto files, read_files(ctx, r));
  return files ? fingerprint_of(r, *files) : std::string();
}

Status provision_if_needed(Context& ctx, const Resolved& r, std::optional<audit::AuditWriter>& audit) {
  TNK_ASSIGN_OR_RETURN(auto files, read_files(ctx, r));
  if (!files) return ok_status();
  std::string fingerprint = fingerprint_of(r, *files);
  state::Store store(ctx.paths.sandboxes_dir());
  // One provisioning run at a time per sandbox; whoever waited finds it done and skips it.
  TNK_ASSIGN_OR_RETURN(FileLock running,
                       FileLock::acquire(store.file(r.id, state::kProvisionLock), std::chrono::hours(1), [&] {
                         ctx.log.info("waiting for another tnk to finish provisioning " + r.id);
                       }));
  TNK_ASSIGN_OR_RETURN(auto record, store.load(r.id));
  if (record && record->provision_fingerprint == fingerprint) {
    ctx.log.verbose("provisioning skipped: profile " + r.profile + " and its inputs are unchanged");
    return ok_status();
  }
  return run_script(ctx, r, *files, fingerprint, audit);
}

}  // namespace tnk::sandbox
