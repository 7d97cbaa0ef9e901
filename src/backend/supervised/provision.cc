#include "backend/supervised/provision.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "audit/events.h"
#include "backend/supervised/session_run.h"
#include "core/files.h"
#include "core/stopwatch.h"
#include "sandbox/audit_target.h"
#include "sandbox/provision.h"
#include "sandbox/provision_output.h"
#include "sandbox/registries.h"

namespace tnk::supervised {
namespace {

using sandbox::ProvisionFiles;
using sandbox::Resolved;
using sandbox::SessionSpec;

// Where the script and lib go inside: the layout the scripts expect ($(dirname "$0")/lib/...). Written
// by root inside and only writable by root, so an agent session cannot change a file between its copy
// and its use (security review M3; it was /tmp/tnk-provision).
constexpr const char* kGuestDir = "/var/lib/tnk/provision";
constexpr const char* kPrepareDir = "umask 022 && rm -rf -- \"$1\" && mkdir -p -- \"$1/lib\"";
constexpr const char* kWriteFile = "umask 022 && cat > \"$1\"";

// Every process the agent runs, its background ones included: `kill -1` from an agent session signals
// every process of the sandbox that the agent may signal, that is its own, and never PID 1.
constexpr const char* kEndAgentProcesses = "kill -KILL -1 2>/dev/null; exit 0";

Result<UniqueFd> memory_file(const std::string& contents) {
  UniqueFd fd(::memfd_create("tnk-provision-file", MFD_CLOEXEC));
  if (!fd.valid()) return sys_error(errno, "memfd_create");
  TNK_RETURN_IF_ERROR(write_all(fd.get(), contents, "provisioning file"));
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) return sys_error(errno, "lseek");
  return fd;
}

// A session of tnk's own (not audited as the user's), with `contents` on its stdin; its exit status.
Result<int> run_helper(Context& ctx, const Resolved& r, session::Identity identity, std::vector<std::string> argv,
                       const std::string& contents = "") {
  SessionSpec spec;
  spec.argv = std::move(argv);
  spec.identity = identity;
  TNK_ASSIGN_OR_RETURN(UniqueFd in, memory_file(contents));
  session::ClientOptions options;
  options.in_fd = in.get();
  std::optional<audit::AuditWriter> no_audit;
  return run_session(ctx, r, spec, no_audit, options);
}

// Empties the directory, then copies each file in by running `cat` as root inside.
Status copy_in(Context& ctx, const Resolved& r, const ProvisionFiles& files) {
  TNK_ASSIGN_OR_RETURN(int prepared,
                       run_helper(ctx, r, session::Identity::kRoot, {"/bin/sh", "-c", kPrepareDir, "sh", kGuestDir}));
  if (prepared != 0) return failed("preparing " + std::string(kGuestDir) + " in " + r.id + " failed");
  for (const auto& [name, text] : files.files) {
    std::string path = std::string(kGuestDir) + "/" + name;
    TNK_ASSIGN_OR_RETURN(int code,
                         run_helper(ctx, r, session::Identity::kRoot, {"/bin/sh", "-c", kWriteFile, "sh", path}, text));
    if (code != 0) return failed("copying " + name + " into " + r.id + " failed (exit " + std::to_string(code) + ")");
  }
  return ok_status();
}

Result<bool> guest_token_present(Context& ctx, const Resolved& r) {
  TNK_ASSIGN_OR_RETURN(int code, run_helper(ctx, r, session::Identity::kAgent,
                                            {"/bin/sh", "-c", "test -e \"$1\"", "sh", sandbox::kGuestProvisionToken}));
  return code == 0;
}

Status run_script(Context& ctx, const Resolved& r, const ProvisionFiles& files,
                  const sandbox::ProvisionFingerprint& fingerprint, const sandbox::ProvisionRun& run,
                  std::optional<audit::AuditWriter>& audit) {
  NetworkPolicy policy = r.manifest.provision_network.value_or(NetworkPolicy::kAllowlist);
  std::vector<std::string> allow;
  if (policy == NetworkPolicy::kAllowlist) {
    TNK_ASSIGN_OR_RETURN(allow, sandbox::provision_allow_list(r.manifest.provision_allow_domains));
  }
  // Nothing the agent started may watch or race the run (ptrace it, or use its egress): a running
  // sandbox's agent processes end first, and no session starts while the provisioning lock is held.
  if (run.end_agent_processes) {
    ctx.log.info("ending the agent's processes in " + r.id + " before provisioning it again");
    TNK_RETURN_IF_ERROR(run_helper(ctx, r, session::Identity::kAgent, {"/bin/bash", "-c", kEndAgentProcesses}));
  }
  if (run.forget_guest_tokens) {
    TNK_RETURN_IF_ERROR(
        run_helper(ctx, r, session::Identity::kAgent,
                   {"/bin/sh", "-c", sandbox::kForgetGuestTokens, "sh", sandbox::kGuestProvisionToken}));
  }
  TNK_RETURN_IF_ERROR(copy_in(ctx, r, files));
  ctx.log.info("provisioning " + r.id + " with profile " + r.profile);
  sandbox::audit_append(audit, audit::provision_start(r.id, r.profile, fingerprint.full));
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
  const Stopwatch clock;
  options.on_quiet = [&] { ctx.log.info("provisioning " + r.id + ": still running, " + clock.text()); };
  bool stopped = false;
  Result<int> code = 0;
  for (const sandbox::ProvisionPhase& phase : sandbox::provision_phases(files)) {
    SessionSpec spec;
    spec.argv = {"/bin/bash", "-c", sandbox::kProvisionRunner, std::string(kGuestDir) + "/" + phase.script_name};
    spec.identity = phase.identity;
    spec.provisioning = true;
    spec.egress_allow = allow;
    spec.egress_any = policy == NetworkPolicy::kOpen;
    code = run_session(ctx, r, spec, audit, options, &stopped);
    if (!code || *code != 0) break;
  }
  Status finished = tee.finish(code, fingerprint);
  if (finished.ok() || !stopped) return finished;
  // Not the script's failure: the hint "the sandbox is running and usable" would be wrong.
  return finished.error()
      .context("the sandbox " + r.id + " was stopped while it was being provisioned")
      .with_hint("`tnk sandbox start` starts it and runs the provisioning again");
}

}  // namespace

Status provision_if_needed(Context& ctx, const Resolved& r, const sandbox::ProvisionRequest& request,
                           std::optional<audit::AuditWriter>& audit) {
  sandbox::Provisioner provisioner;
  provisioner.run = [&](const ProvisionFiles& files, const sandbox::ProvisionFingerprint& fingerprint,
                        const sandbox::ProvisionRun& run) {
    return run_script(ctx, r, files, fingerprint, run, audit);
  };
  provisioner.guest_token_present = [&] { return guest_token_present(ctx, r); };
  return sandbox::provision_if_needed(ctx, r, request, provisioner);
}

}  // namespace tnk::supervised
