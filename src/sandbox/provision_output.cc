#include "sandbox/provision_output.h"

#include <optional>
#include <ostream>

#include "audit/events.h"
#include "core/terminal_text.h"
#include "sandbox/audit_target.h"
#include "state/store.h"

namespace tnk::sandbox {
namespace {

Status save_fingerprint(Context& ctx, const std::string& id, const ProvisionFingerprint& fingerprint) {
  state::Store store(ctx.paths.sandboxes_dir());
  TNK_ASSIGN_OR_RETURN(std::optional<FileLock> lock, store.lock_existing(id, ctx.log));
  std::optional<state::SandboxRecord> record;
  if (lock) {
    TNK_ASSIGN_OR_RETURN(record, store.load(id));
  }
  if (!record) return not_found("sandbox " + id + " was deleted while it was being provisioned");
  record->provision_fingerprint = fingerprint.full;
  record->provision_inputs_fingerprint = fingerprint.inputs;
  return store.save(*record);
}

}  // namespace

void ProvisionOutput::add(int stream, std::string_view bytes) {
  std::string& pending = pending_[stream];
  pending.append(bytes);
  for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
    line(stream, pending.substr(0, nl));
    pending.erase(0, nl + 1);
  }
  // A script that prints without end of line (a progress bar, or on purpose) is cut into lines of
  // kMaxLineBytes: what waits here for a newline stays bounded (security review M5).
  while (pending.size() >= kMaxLineBytes) {
    line(stream, pending.substr(0, kMaxLineBytes));
    pending.erase(0, kMaxLineBytes);
  }
}

void ProvisionOutput::flush() {
  for (auto& [stream, rest] : pending_) {
    if (!rest.empty()) line(stream, rest);
    rest.clear();
  }
}

void ProvisionOutput::line(int stream, const std::string& text) {
  ctx_.log.stream() << terminal_safe(text) << '\n' << std::flush;
  if (text.starts_with("tnk: provisioning failed at ")) failure_ = text.substr(5);
  if (text.find("\"no new privileges\" flag is set") != std::string::npos) sudo_refused_ = true;
  audit_append(audit_, audit::provision_output(r_.id, r_.profile, stream == 2 ? "stderr" : "stdout", text));
}

Status ProvisionOutput::finish(const Result<int>& code, const ProvisionFingerprint& fingerprint) {
  flush();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_);
  audit_append(audit_, audit::provision_end(r_.id, r_.profile, code ? *code : -1, ms.count()));
  if (audit_) (void)audit_->sync();
  if (!code) return code.error();
  if (*code != 0) {
    std::string where = failure_.empty() ? "" : ": " + failure_;
    std::string hint = "the sandbox is running and usable; fix the script and run `tnk sandbox start` to try again";
    if (sudo_refused_) {
      hint =
          "the script runs sudo, which provisioning's agent phase does not have: move what needs root into "
          "provision.d/" +
          r_.profile + ".root.sh, which tnk runs as root before it (docs/specs.md, \"Two phases\")";
    }
    return failed("provisioning " + r_.id + " with profile " + r_.profile + " failed (exit " + std::to_string(*code) +
                      ")" + where,
                  hint);
  }
  TNK_RETURN_IF_ERROR(save_fingerprint(ctx_, r_.id, fingerprint));
  ctx_.log.info("provisioned " + r_.id + " in " + std::to_string(ms.count() / 1000) + " s");
  return ok_status();
}

}  // namespace tnk::sandbox
