// tnk sandbox pending: the requests a running sandbox's proxy refused that an allow rule would let
// through, listed or (--watch) followed as they come, for a person or a notifier to approve
// (`tnk sandbox approve`, cmd_network.cc).
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "backend/live_policy.h"
#include "cli/sandbox_verbs.h"
#include "output/output.h"

namespace tnk::cli {
namespace {

struct PendingFlags {
  SandboxFlags sandbox;
  bool watch = false;
};

// "3f9a1c2e  192.0.2.2:8443  refused 3 time(s), first 2026-12-06T15:01:02Z, last 2026-12-06T15:03:00Z"
std::string pending_line(const nlohmann::json& request) {
  return request.value("id", "?") + "  " + request.value("entry", "?") + "  refused " +
         std::to_string(request.value("count", uint64_t{0})) + " time(s), first " + request.value("first_seen", "?") +
         ", last " + request.value("last_seen", "?");
}

void print_pending(std::ostream& os, const backend::PendingView& view) {
  if (!view.running) {
    os << view.id << " is not running: no request is pending (requests wait for approval while it runs)\n";
    return;
  }
  if (view.requests.empty()) {
    os << "no request of " << view.id << " waits for approval";
    if (view.policy != "allowlist") {
      os << ": it runs under the " << view.policy << " policy, and only the allowlist policy's refusals wait";
    }
    os << "\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& request : view.requests) {
    rows.push_back({request.value("id", "?"), request.value("entry", "?"),
                    std::to_string(request.value("count", uint64_t{0})), request.value("first_seen", "?"),
                    request.value("last_seen", "?")});
  }
  os << render_table({"ID", "HOST:PORT", "COUNT", "FIRST SEEN", "LAST SEEN"}, rows);
  os << "let one through: tnk sandbox approve ID [--for DURATION]\n";
}

Result<int> run_pending(Context& ctx, const PendingFlags& flags) {
  if (!flags.watch) {
    TNK_ASSIGN_OR_RETURN(backend::PendingView view, backend::show_pending(ctx, flags.sandbox.resolve_options()));
    ctx.out.list(view.requests, [&](std::ostream& os) { print_pending(os, view); });
    return kExitOk;
  }
  // One line per request as it comes, whatever the format: a stream has no enclosing document.
  auto seen = [&ctx](const nlohmann::json& request) {
    ctx.out.document(request, [&](std::ostream& os) { os << pending_line(request) << "\n"; });
    return ctx.out.writable();
  };
  TNK_ASSIGN_OR_RETURN(backend::WatchEnd end, backend::watch_pending(ctx, flags.sandbox.resolve_options(), seen));
  if (end == backend::WatchEnd::kStopped) ctx.log.info("the sandbox stopped: nothing more can be pending");
  return kExitOk;
}

}  // namespace

void add_pending_command(CLI::App& sandbox, CommandTable& table) {
  auto* pending = sandbox.add_subcommand("pending", "List the refused requests an approval would let through");
  describe(*pending,
           "List the requests the running sandbox's proxy refused because no allow-list entry lets their host and "
           "port through (the allowlist policy): one entry per HOST:PORT with an ID, how many times it was "
           "refused, and when first and last. `tnk sandbox approve ID` lets one through. Its supervisor keeps "
           "them while it runs, at most 256 (a new one pushes out the one seen least recently), and drops one "
           "once a rule allows or denies it. With --watch, print each request that is new or refused again as "
           "it comes (those pending already first), one JSON object a line with -o json or ndjson, until "
           "Ctrl-C or the sandbox stops: for an editor or a desktop notifier to ask the person. Only the host "
           "user sees them; nothing inside the sandbox reaches its supervisor.",
           "tnk sandbox pending --watch -o ndjson");
  auto flags = std::make_shared<PendingFlags>();
  add_sandbox_flags(*pending, flags->sandbox, false);
  pending->add_flag("--watch", flags->watch, "Keep printing new and repeated refusals until Ctrl-C or the stop");
  table.add(pending, [flags](Context& ctx) { return run_pending(ctx, *flags); });
}

}  // namespace tnk::cli
