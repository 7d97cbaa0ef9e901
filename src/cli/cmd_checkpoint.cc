// tnk sandbox checkpoint | checkpoints | restore | fork (docs/checkpoints.md).
#include <ctime>

#include "backend/checkpoint.h"
#include "backend/fork.h"
#include "cli/sandbox_verbs.h"
#include "output/output.h"

namespace tnk::cli {
namespace {

struct CheckpointFlags {
  std::string name;
  std::string audit_log;
};

struct ForkFlags {
  int count = 1;
  std::string from;
  std::string audit_log;
  SandboxFlags sandbox;
};

std::string local_time(int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm local{};
  ::localtime_r(&t, &local);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &local);
  return buf;
}

Result<backend::CheckpointRequest> request_of(Context& ctx, const CheckpointFlags& flags) {
  backend::CheckpointRequest request;
  TNK_ASSIGN_OR_RETURN(request.id, current_sandbox_id(ctx));
  request.name = flags.name;
  request.audit_log = flags.audit_log;
  return request;
}

Result<int> run_checkpoint(Context& ctx, const CheckpointFlags& flags) {
  TNK_ASSIGN_OR_RETURN(auto request, request_of(ctx, flags));
  TNK_ASSIGN_OR_RETURN(backend::Checkpoint made, backend::make_checkpoint(ctx, request));
  ctx.out.document(backend::to_json(made), [&](std::ostream& os) {
    os << "checkpoint " << made.name << " of " << request.id << ": " << megabytes(made.bytes)
       << (made.was_running ? " (held still while it was copied)" : "") << '\n';
  });
  return kExitOk;
}

Result<int> run_checkpoints(Context& ctx) {
  TNK_ASSIGN_OR_RETURN(std::string id, current_sandbox_id(ctx));
  TNK_ASSIGN_OR_RETURN(auto found, backend::list_checkpoints(ctx, id));
  nlohmann::json items = nlohmann::json::array();
  for (const auto& c : found) items.push_back(backend::to_json(c));
  ctx.out.list(items, [&](std::ostream& os) {
    if (found.empty()) {
      os << "no checkpoints of " << id << ": `tnk sandbox checkpoint [NAME]` makes one\n";
      return;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& c : found) {
      rows.push_back({c.name, local_time(c.created_at), megabytes(c.bytes), c.was_running ? "running" : "stopped"});
    }
    os << render_table({"NAME", "CREATED", "SIZE", "SANDBOX WAS"}, rows);
  });
  return kExitOk;
}

Result<int> run_checkpoint_rm(Context& ctx, const CheckpointFlags& flags) {
  TNK_ASSIGN_OR_RETURN(auto request, request_of(ctx, flags));
  TNK_RETURN_IF_ERROR(backend::remove_checkpoint(ctx, request));
  ctx.log.info("removed checkpoint " + request.name + " of " + request.id);
  return kExitOk;
}

Result<int> run_restore(Context& ctx, const CheckpointFlags& flags) {
  TNK_ASSIGN_OR_RETURN(auto request, request_of(ctx, flags));
  TNK_ASSIGN_OR_RETURN(backend::Checkpoint restored, backend::restore_checkpoint(ctx, request));
  ctx.out.document(backend::to_json(restored), [&](std::ostream& os) {
    os << request.id << " is back at checkpoint " << restored.name << " (" << local_time(restored.created_at) << ")\n";
  });
  return kExitOk;
}

Result<int> run_fork(Context& ctx, const ForkFlags& flags) {
  backend::ForkRequest request;
  request.count = flags.count;
  request.from = flags.from;
  request.audit_log = flags.audit_log;
  if (!flags.sandbox.profile.empty())
    request.start_flags.insert(request.start_flags.end(), {"--profile", flags.sandbox.profile});
  if (flags.sandbox.network) {
    request.start_flags.insert(request.start_flags.end(), {"--network", to_string(*flags.sandbox.network)});
  }
  TNK_ASSIGN_OR_RETURN(backend::ForkReport report, backend::fork_sandbox(ctx, request));
  nlohmann::json items = nlohmann::json::array();
  for (const auto& id : report.forks) {
    items.push_back({{"id", id},
                     {"parent", report.parent},
                     {"from", report.from.empty() ? nlohmann::json() : nlohmann::json(report.from)}});
  }
  ctx.out.list(items, [&](std::ostream& os) {
    for (const auto& id : report.forks) os << id << '\n';
    if (!report.forks.empty()) {
      os << "each runs in review mode: tnk --sandbox " << report.forks.front()
         << " sandbox shell | exec | diff --patch | apply\n";
    }
  });
  return kExitOk;
}

}  // namespace

void add_checkpoint_commands(CLI::App& sandbox, CommandTable& table) {
  auto* checkpoint = sandbox.add_subcommand("checkpoint", "Keep a copy of the sandbox's own state, to restore or fork");
  describe(*checkpoint,
           "Copy what the sandbox wrote of its own (ns: its root and home layer; vm: its disk) and, in review mode, "
           "its review layer, into a checkpoint in its state directory, copy-on-write where the file system can. "
           "A running sandbox is held still for the moment of the copy and goes on. The project directory is never "
           "part of a checkpoint, nor are processes (docs/checkpoints.md). NAME defaults to the time.",
           "tnk sandbox checkpoint provisioned");
  auto checkpoint_flags = std::make_shared<CheckpointFlags>();
  checkpoint->add_option("NAME", checkpoint_flags->name, "The checkpoint's name (letters, digits, '-', '_')");
  checkpoint->add_option("--audit-log", checkpoint_flags->audit_log, "Append the audit record to this file");
  table.add(checkpoint, [checkpoint_flags](Context& ctx) { return run_checkpoint(ctx, *checkpoint_flags); });

  auto* rm = checkpoint->add_subcommand("rm", "Remove a checkpoint");
  describe(*rm, "Remove the checkpoint NAME of the sandbox, and write a checkpoint audit record.",
           "tnk sandbox checkpoint rm provisioned");
  auto rm_flags = std::make_shared<CheckpointFlags>();
  rm->add_option("NAME", rm_flags->name, "The checkpoint to remove")->required();
  rm->add_option("--audit-log", rm_flags->audit_log, "Append the audit record to this file");
  table.add(rm, [rm_flags](Context& ctx) { return run_checkpoint_rm(ctx, *rm_flags); });

  auto* list = sandbox.add_subcommand("checkpoints", "List the sandbox's checkpoints");
  describe(*list, "List the sandbox's checkpoints, newest first, with when, their size, and whether it ran.",
           "tnk sandbox checkpoints -o json");
  table.add(list, [](Context& ctx) { return run_checkpoints(ctx); });

  auto* restore = sandbox.add_subcommand("restore", "Put the sandbox back to a checkpoint");
  describe(*restore,
           "Put the sandbox's own state back as the checkpoint NAME kept it. A running sandbox is stopped, put back "
           "and started again (its processes end: a checkpoint holds none). The project is left as it is.",
           "tnk sandbox restore provisioned");
  auto restore_flags = std::make_shared<CheckpointFlags>();
  restore->add_option("NAME", restore_flags->name, "The checkpoint")->required();
  restore->add_option("--audit-log", restore_flags->audit_log, "Append the audit record to this file");
  table.add(restore, [restore_flags](Context& ctx) { return run_restore(ctx, *restore_flags); });

  auto* fork = sandbox.add_subcommand("fork", "Make N sandboxes from this one, each reviewed and applied on its own");
  describe(*fork,
           "Make N forks of the project's sandbox, named <id>.1, <id>.2, ...: each a copy of its own state (as it "
           "is, held still for the copy, or as checkpoint --from kept it), in review mode over the same project, "
           "started with its own supervisor, network policy, tokens and audit log. Select one with `tnk --sandbox "
           "<id>.<n> sandbox ...`; `diff`, `apply` and `discard` work on each alone, and an apply from one makes "
           "the others' changes to the same paths conflicts. `tnk sandbox ls` shows each fork's parent.",
           "tnk sandbox fork -n 3");
  auto fork_flags = std::make_shared<ForkFlags>();
  fork->add_option("-n,--count", fork_flags->count, "How many forks (1 to 64)");
  fork->add_option("--from", fork_flags->from, "Start them from this checkpoint rather than the sandbox as it is");
  fork->add_option("--audit-log", fork_flags->audit_log, "Append the audit records to this file");
  add_sandbox_flags(*fork, fork_flags->sandbox, false);
  table.add(fork, [fork_flags](Context& ctx) { return run_fork(ctx, *fork_flags); });
}

}  // namespace tnk::cli
