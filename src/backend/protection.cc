#include "backend/protection.h"

#include "audit/events.h"
#include "sandbox/audit_target.h"
#include "state/store.h"

namespace tnk::backend {

namespace {

std::filesystem::path sandbox_dir(Context& ctx, const std::string& id) {
  return state::Store(ctx.paths.sandboxes_dir()).dir(id);
}

// The record with what appeared since marked (and written back); `appeared` gets the new ones.
std::vector<state::ProtectedPath> current_record(Context& ctx, const std::string& id,
                                                 std::vector<state::ProtectedPath>* appeared) {
  auto paths = state::read_protection(sandbox_dir(ctx, id));
  if (!paths) {
    ctx.log.warn(paths.error().message);
    return {};
  }
  std::vector<state::ProtectedPath> fresh = state::mark_appeared(*paths);
  if (!fresh.empty()) {
    Status written = state::write_protection(sandbox_dir(ctx, id), *paths);
    if (!written.ok()) ctx.log.warn(written.error().message);
  }
  if (appeared != nullptr) *appeared = std::move(fresh);
  return *paths;
}

std::string appeared_warning(const state::ProtectedPath& p) {
  return "the protected path " + p.path + " appeared while the sandbox ran (created: " + p.host_path.string() +
         "): it was missing at start, so nothing kept the sandbox from writing it; check it before anything on "
         "the host uses it, and restart the sandbox to protect it";
}

}  // namespace

std::vector<state::ProtectedPath> protection_of(Context& ctx, const sandbox::Resolved& r, bool enforced) {
  if (enforced && r.state == state::SandboxState::kRunning) return current_record(ctx, r.id, nullptr);
  std::vector<state::ProtectedPath> paths;
  for (const auto& rel : r.manifest.readonly_paths) {
    state::ProtectedPath now = state::classify_path(rel, r.project.dir, rel);
    if (!enforced) now.state = state::Protection::kNotEnforceable;
    paths.push_back(std::move(now));
  }
  return paths;
}

void report_appeared(Context& ctx, const std::string& id, std::optional<audit::AuditWriter>& audit) {
  std::vector<state::ProtectedPath> appeared;
  current_record(ctx, id, &appeared);
  for (const auto& p : appeared) {
    ctx.log.warn(appeared_warning(p));
    sandbox::audit_append(audit, audit::protected_path_appeared(id, p.path, p.host_path.string()));
  }
}

void warn_appeared_at_stop(Context& ctx, const std::string& id, std::optional<audit::AuditWriter>& audit) {
  std::vector<state::ProtectedPath> appeared;
  for (const auto& p : current_record(ctx, id, &appeared)) {
    if (p.state == state::Protection::kAppeared) ctx.log.warn(appeared_warning(p));
  }
  for (const auto& p : appeared) {
    sandbox::audit_append(audit, audit::protected_path_appeared(id, p.path, p.host_path.string()));
  }
}

}  // namespace tnk::backend
