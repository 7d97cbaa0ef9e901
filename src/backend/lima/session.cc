// Sessions and provisioning of lima sandboxes: `limactl shell` and `limactl copy`.

#include "audit/events.h"
#include "backend/lima/lifecycle.h"
#include "backend/lima/limactl.h"
#include "sandbox/audit_target.h"
#include "sandbox/provision.h"
#include "sandbox/provision_output.h"
#include "specs/profiles.h"

namespace tnk::lima {
namespace {

constexpr std::chrono::minutes kCopyTimeout{2};

Status copy_files(Context& ctx, lima::Limactl& limactl, const sandbox::Resolved& r,
                  const sandbox::ProvisionFiles& files) {
  auto prepared = limactl.capture(lima::prepare_provision_dir_argv(r.id), kCopyTimeout);
  if (!prepared || prepared->exit_code != 0) {
    std::string why = !prepared ? prepared.error().message : lima::tail_lines(prepared->err, 4);
    return failed("preparing " + std::string(lima::kGuestProvisionDir) + " in " + r.id + " failed: " + why);
  }
  for (const auto& [relative, contents] : files.files) {
    std::filesystem::path host = provision_host_file(ctx, relative);
    auto copied = limactl.capture(lima::copy_argv(host, r.id, lima::guest_provision_path(relative)), kCopyTimeout);
    if (!copied || copied->exit_code != 0) {
      std::string why = !copied ? copied.error().message : lima::tail_lines(copied->err, 4);
      return failed("copying " + host.string() + " into " + r.id + " failed: " + why);
    }
  }
  return ok_status();
}

Status run_provisioning(Context& ctx, const sandbox::Resolved& r, const sandbox::ProvisionFiles& files,
                        const sandbox::ProvisionFingerprint& fingerprint, std::optional<audit::AuditWriter>& audit) {
  auto limactl = lima::system_limactl();
  TNK_RETURN_IF_ERROR(copy_files(ctx, *limactl, r, files));
  ctx.log.info("provisioning " + r.id + " with profile " + r.profile);
  sandbox::audit_append(audit, audit::provision_start(r.id, r.profile, fingerprint.full));
  auto env = sandbox::session_environment(ctx.env, r, {});
  sandbox::ProvisionOutput output(ctx, audit, r);
  Result<int> code = 0;
  for (const sandbox::ProvisionPhase& phase : sandbox::provision_phases(files)) {
    std::vector<std::string> run = {"bash", "-c", sandbox::kProvisionRunner,
                                    lima::guest_provision_path(phase.script_name)};
    bool as_root = phase.identity == session::Identity::kRoot;
    auto argv = lima::shell_argv(r.id, r.guest_workdir, env, run, false, as_root);
    code = limactl->stream(argv, [&](int stream, std::string_view bytes) { output.add(stream, bytes); });
    if (!code || *code != 0) break;
  }
  return output.finish(code, fingerprint);
}

}  // namespace

std::filesystem::path provision_host_file(Context& ctx, const std::string& relative) {
  if (relative.rfind("lib/", 0) == 0) return specs::provision_lib_dir(ctx.paths.config_dir) / relative.substr(4);
  return specs::provision_dir(ctx.paths.config_dir) / relative;
}

Result<int> run_lima_session(Context& ctx, const sandbox::Resolved& r, const sandbox::SessionSpec& spec,
                             std::optional<audit::AuditWriter>& audit) {
  auto env = sandbox::session_environment(ctx.env, r, spec.user_env);
  bool as_root = spec.identity == session::Identity::kRoot;
  auto argv = lima::shell_argv(r.id, r.guest_workdir, env, spec.argv, spec.tty, as_root);
  // The argv run inside the sandbox, as on the other backends; never limactl's, which holds -e values.
  TNK_RETURN_IF_ERROR(sandbox::audit_session_start(audit, r, r.guest_workdir, spec));
  if (audit) (void)audit->sync();
  auto limactl = lima::system_limactl();
  TNK_ASSIGN_OR_RETURN(int code, limactl->interactive(argv));
  sandbox::audit_session_exit(audit, r, code);
  if (audit) (void)audit->sync();
  return code;
}

// Lima's default user has passwordless sudo in every session (Lima's own default), so ending its
// processes before a run would protect nothing; the token check is left to the script, as in the original.
Status provision_lima_if_needed(Context& ctx, const sandbox::Resolved& r, const sandbox::ProvisionRequest& request,
                                std::optional<audit::AuditWriter>& audit) {
  sandbox::Provisioner provisioner;
  provisioner.run = [&](const sandbox::ProvisionFiles& files, const sandbox::ProvisionFingerprint& fingerprint,
                        const sandbox::ProvisionRun&) { return run_provisioning(ctx, r, files, fingerprint, audit); };
  return sandbox::provision_if_needed(ctx, r, request, provisioner);
}

}  // namespace tnk::lima
