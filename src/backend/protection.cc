#include "backend/protection.h"

#include "audit/events.h"
#include "review/diff.h"
#include "sandbox/audit_target.h"
#include "state/git_guard.h"
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

std::string held_warning(const state::HeldEntry& h) {
  if (h.held_as.empty()) {
    return "the sandbox wrote " + h.path + ", which the host's git would use (" + h.what +
           "), and tnk could not hold it (" + h.error + "): do not run git in the project before you remove it";
  }
  return "held " + h.path + ": the sandbox wrote it, and the host's git would use it (" + h.what + "); renamed to " +
         h.held_as + ", which git never reads. Read it, and rename it back only if you trust it";
}

// Whether `path` is a protected path of the record, or below one: the sandbox could not write it.
bool protected_on_host(const std::vector<state::ProtectedPath>& record, const std::string& path) {
  for (const auto& p : record) {
    if (p.state != state::Protection::kProtected) continue;
    const std::string top = p.host_path.string();
    if (path == top || path.starts_with(top + "/")) return true;
  }
  return false;
}

}  // namespace

void guard_git(Context& ctx, const std::string& id, std::optional<audit::AuditWriter>& audit,
               const std::vector<std::string>& named, GitWalk walk) {
  state::Store store(ctx.paths.sandboxes_dir());
  auto record = store.load(id);
  auto guard = state::read_git_record(store.dir(id));
  if (!record || !*record || !guard) {
    if (!guard) ctx.log.warn(guard.error().message);
    return;
  }
  if (!guard->present) return;  // started by a tnk without the guard: nothing to compare with
  const std::filesystem::path project = (*record)->project_dir;
  if (walk == GitWalk::kWhenChanged && !guard->stamp.empty() && guard->stamp == state::git_stamp(project)) return;
  auto protection = state::read_protection(store.dir(id));
  std::vector<state::ProtectedPath> protected_paths = protection ? *protection : std::vector<state::ProtectedPath>{};
  const std::vector<std::filesystem::path> roots = state::git_roots(project);
  std::vector<state::HeldEntry> held;
  state::walk_git(project, [&](const std::filesystem::path& entry, const state::GitEntry& now) {
    if (!state::must_hold(guard->start, entry.string(), now) || protected_on_host(protected_paths, entry.string())) {
      return;
    }
    const std::string rel = entry.lexically_relative(project).generic_string();
    for (const auto& selector : named) {
      if (!selector.empty() && review::selects(selector, rel)) return;
    }
    held.push_back(state::hold_git_entry(entry, now, roots));
  });
  for (const auto& h : held) {
    ctx.log.warn(held_warning(h));
    sandbox::audit_append(audit, audit::git_entry_held(id, h.path, h.held_as, h.what));
  }
  guard->held.insert(guard->held.end(), held.begin(), held.end());
  const std::string stamp = state::git_stamp(project);  // after the holds, which may have changed it
  if (held.empty() && stamp == guard->stamp) return;
  Status written = state::write_git_record(store.dir(id), guard->start, guard->held, stamp);
  if (!written.ok()) ctx.log.warn(written.error().message);
}

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
  guard_git(ctx, id, audit, {}, GitWalk::kWhenChanged);
  std::vector<state::ProtectedPath> appeared;
  current_record(ctx, id, &appeared);
  for (const auto& p : appeared) {
    ctx.log.warn(appeared_warning(p));
    sandbox::audit_append(audit, audit::protected_path_appeared(id, p.path, p.host_path.string()));
  }
}

void warn_appeared_at_stop(Context& ctx, const std::string& id, std::optional<audit::AuditWriter>& audit) {
  // What a session held was said after it; what only this check holds is said here, once.
  auto before = state::read_git_record(state::Store(ctx.paths.sandboxes_dir()).dir(id));
  const size_t said = before ? before->held.size() : 0;
  guard_git(ctx, id, audit);
  if (auto after = state::read_git_record(state::Store(ctx.paths.sandboxes_dir()).dir(id)); after && said > 0) {
    for (size_t i = 0; i < said && i < after->held.size(); ++i) ctx.log.warn(held_warning(after->held[i]));
  }
  std::vector<state::ProtectedPath> appeared;
  for (const auto& p : current_record(ctx, id, &appeared)) {
    if (p.state == state::Protection::kAppeared) ctx.log.warn(appeared_warning(p));
  }
  for (const auto& p : appeared) {
    sandbox::audit_append(audit, audit::protected_path_appeared(id, p.path, p.host_path.string()));
  }
}

}  // namespace tnk::backend
