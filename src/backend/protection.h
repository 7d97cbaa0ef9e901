// What the command line does with protected paths (docs/workspace.md): what inspect shows of them, and
// the loud report of one that was missing at start and appeared while the sandbox ran.
#pragma once

#include <optional>
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

// At stop: a warning naming every path that appeared while the sandbox ran.
void warn_appeared_at_stop(Context& ctx, const std::string& id, std::optional<audit::AuditWriter>& audit);

}  // namespace tnk::backend
