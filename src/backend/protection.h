// What the command line does with protected paths (docs/workspace.md): what inspect shows of them, and
// the loud report of one that was missing at start and appeared while the sandbox ran.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "audit/writer.h"
#include "context/context.h"
#include "sandbox/resolve.h"
#include "state/protection.h"

namespace tnk::backend {

// A running sandbox's record, with what appeared since; otherwise what a start would find now. On a
// backend that cannot enforce them, every path is kNotEnforceable.
std::vector<state::ProtectedPath> protection_of(Context& ctx, const sandbox::Resolved& r, bool enforced);

// After a session: each missing path that exists now is a warning and a protected_path_appeared
// record (once: the record then holds it as kAppeared).
void report_appeared(Context& ctx, const std::string& id, std::optional<audit::AuditWriter>& audit);

// After a session, at stop and after an apply (issue 32): what the host's git would run or follow that
// the sandbox wrote since start is held (state/git_guard.h): renamed, with a warning and a
// git_entry_held record each. A path the user named to apply (`named`, project-relative) is theirs,
// applied knowingly: not held. Protected paths cannot have changed inside; a change to one is the
// host's own, and is left alone.
// After a session the walk runs only when the top repository's stamp changed (state::git_stamp): a
// command that touched no git state pays a few lstat calls, not four git processes.
enum class GitWalk { kWhenChanged, kAlways };
void guard_git(Context& ctx, const std::string& id, std::optional<audit::AuditWriter>& audit,
               const std::vector<std::string>& named = {}, GitWalk walk = GitWalk::kAlways);

// At stop: a warning naming every path that appeared while the sandbox ran, and every git entry held.
void warn_appeared_at_stop(Context& ctx, const std::string& id, std::optional<audit::AuditWriter>& audit);

}  // namespace tnk::backend
