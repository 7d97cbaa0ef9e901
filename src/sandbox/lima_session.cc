// Sessions and provisioning of lima sandboxes: `limactl shell` and `limactl copy`.
#include <algorithm>
#include <map>

#include "audit/events.h"
#include "backend/lima/limactl.h"
#include "core/file_lock.h"
#include "sandbox/audit_target.h"
#include "sandbox/lima_lifecycle.h"
#include "sandbox/provision.h"
#include "sandbox/provision_output.h"
#include "specs/profiles.h"
#include "state/layout.h"
#include "state/store.h"

namespace tnk::sandbox {
namespace {

constexpr std::chrono::minutes kCopyTimeout{2};

// As on the ns backend: a failure names the script's line (the ERR trap is inherited by functions
// and the script is sourced); the script's path is an argument ($0), never part of this text.
constexpr const char* kRunner =
    "set -E; trap 'echo \"tnk: provisioning failed at ${BASH_SOURCE[0]##*/} line ${LINENO}: ${BASH_COMMAND}\" >&2' "
    "ERR; source \"$0\"";
// Empties the guest's provisioning directory, so that files of an earlier run never linger (the
// original's `copy --recursive` nested lib/lib on a second run: its bug 32).
constexpr const char* kPrepareDir = "rm -rf -- \"$1\" && mkdir -p -- \"$1/lib\"";

std::vector<std::string> env_names(const std::vector<std::string>& assignments) {
  std::vector<std::string> names;
  for (const auto& kv : assignments) names.push_back(kv.substr(0, kv.find('=')));
  return names;
}

// guest path below kGuestProvisionDir -> host file: the script, then lib/*.
std::vector<std::pair<std::string, std::filesystem::path>> provision_files(Context& ctx, const Resolved& r) {
  std::vector<std::pair<std::string, std::filesystem::path>> files;
  files.emplace_back(r.provision_script->filename().string(), *r.provision_script);
  std::vector<std::filesystem::path> lib;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(specs::provision_lib_dir(ctx.paths.config_dir), ec)) {
    if (entry.is_regular_file()) lib.push_back(entry.path());
  }
  std::sort(lib.begin(), lib.end());
  for (const auto& path : lib) files.emplace_back("lib/" + path.filename().string(), path);
  return files;
}

std::string guest_path(const std::string& relative) { return std::string(lima::kGuestProvisionDir) + "/" + relative; }

Status copy_files(Context& ctx, lima::Limactl& limactl, const Resolved& r) {
  auto prepare = lima::shell_argv(r.id, "/", {}, {"sh", "-c", kPrepareDir, "sh", lima::kGuestProvisionDir}, false);
  auto prepared = limactl.capture(prepare, kCopyTimeout);
  if (!prepared || prepared->exit_code != 0) {
    std::string why = !prepared ? prepared.error().message : lima::tail_lines(prepared->err, 4);
    return failed("preparing " + std::string(lima::kGuestProvisionDir) + " in " + r.id + " failed: " + why);
  }
  for (const auto& [relative, host] : provision_files(ctx, r)) {
    auto copied = limactl.capture(lima::copy_argv(host, r.id, guest_path(relative)), kCopyTimeout);
    if (!copied || copied->exit_code != 0) {
      std::string why = !copied ? copied.error().message : lima::tail_lines(copied->err, 4);
      return failed("copying " + host.string() + " into " + r.id + " failed: " + why);
    }
  }
  return ok_status();
}

Status run_provisioning(Context& ctx, const Resolved& r, const std::string& fingerprint,
                        std::optional<audit::AuditWriter>& audit) {
  auto limactl = lima::system_limactl();
  TNK_RETURN_IF_ERROR(copy_files(ctx, *limactl, r));
  ctx.log.info("provisioning " + r.id + " with profile " + r.profile);
  audit_append(ctx, audit, audit::provision_start(r.id, r.profile, fingerprint));
  auto env = session_environment(ctx.env, r, {});
  std::string script = guest_path(r.provision_script->filename().string());
  auto argv = lima::shell_argv(r.id, r.guest_workdir, env, {"bash", "-c", kRunner, script}, false);
  ProvisionOutput output(ctx, audit, r, true);
  auto code = limactl->stream(argv, [&](int stream, std::string_view bytes) { output.add(stream, bytes); });
  return output.finish(code, fingerprint);
}

}  // namespace

Result<int> run_lima_session(Context& ctx, const Resolved& r, const SessionSpec& spec,
                             std::optional<audit::AuditWriter>& audit) {
  auto env = session_environment(ctx.env, r, spec.user_env);
  bool as_root = spec.identity == session::Identity::kRoot;
  auto argv = lima::shell_argv(r.id, r.guest_workdir, env, spec.argv, spec.tty, as_root);
  audit_append(ctx, audit, audit::session_start(r.id, r.guest_workdir, spec.tty, spec.tty, r.runtime_env));
  // The argv run inside the sandbox, as on the other backends; never limactl's, which holds -e values.
  audit_append(ctx, audit, audit::exec_invocation(r.id, spec.argv, spec.tty, r.runtime_env, env_names(spec.user_env)));
  if (audit) (void)audit->sync();
  auto limactl = lima::system_limactl();
  TNK_ASSIGN_OR_RETURN(int code, limactl->interactive(argv));
  std::optional<int> exit_code, signal;
  if (code > 128 && code < 128 + 65) {
    signal = code - 128;
  } else {
    exit_code = code;
  }
  audit_append(ctx, audit, audit::session_exit(r.id, exit_code, signal));
  if (audit) (void)audit->sync();
  return code;
}

Status provision_lima_if_needed(Context& ctx, const Resolved& r, std::optional<audit::AuditWriter>& audit) {
  TNK_ASSIGN_OR_RETURN(std::string fingerprint, provision_fingerprint(ctx, r));
  if (fingerprint.empty()) return ok_status();
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
  return run_provisioning(ctx, r, fingerprint, audit);
}

}  // namespace tnk::sandbox
