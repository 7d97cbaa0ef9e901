#include "backend/supervised/provision.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "audit/events.h"
#include "backend/supervised/session_run.h"
#include "core/files.h"
#include "sandbox/audit_target.h"
#include "sandbox/provision.h"
#include "sandbox/provision_output.h"
#include "sandbox/registries.h"

namespace tnk::supervised {
namespace {

using sandbox::ProvisionFiles;
using sandbox::Resolved;
using sandbox::SessionSpec;

// Where the script and lib go inside: the layout the scripts expect ($(dirname "$0")/lib/...).
constexpr const char* kGuestDir = "/tmp/tnk-provision";

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
    TNK_ASSIGN_OR_RETURN(allow, sandbox::provision_allow_list(r.manifest.provision_allow_domains));
  }
  for (const auto& [name, text] : files.files) TNK_RETURN_IF_ERROR(copy_in(ctx, r, name, text));
  ctx.log.info("provisioning " + r.id + " with profile " + r.profile);
  sandbox::audit_append(ctx, audit, audit::provision_start(r.id, r.profile, fingerprint));
  SessionSpec spec;
  spec.argv = {"bash", "-c", sandbox::kProvisionRunner, std::string(kGuestDir) + "/" + files.script_name};
  spec.identity = session::Identity::kProvision;
  spec.egress_allow = allow;
  spec.egress_any = policy == NetworkPolicy::kOpen;
  sandbox::ProvisionOutput tee(ctx, audit, r);
  UniqueFd no_input(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  UniqueFd discard(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  if (!no_input.valid() || !discard.valid()) return sys_error(errno, "cannot open /dev/null");
  session::ClientOptions options;
  options.in_fd = no_input.get();
  // The bytes reach the terminal only through the tee, as safe text on stderr; stdout stays clean.
  options.out_fd = discard.get();
  options.err_fd = discard.get();
  options.tee = [&](int stream, std::string_view bytes) { tee.add(stream, bytes); };
  auto code = run_session(ctx, r, spec, audit, options);
  return tee.finish(code, fingerprint);
}

}  // namespace

Status provision_if_needed(Context& ctx, const Resolved& r, std::optional<audit::AuditWriter>& audit) {
  return sandbox::provision_if_needed(ctx, r, [&](const ProvisionFiles& files, const std::string& fingerprint) {
    return run_script(ctx, r, files, fingerprint, audit);
  });
}

}  // namespace tnk::supervised
