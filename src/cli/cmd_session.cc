// tnk sandbox start | shell | exec: enter the current project's sandbox.
// Flags are checked before anything is resolved, and the sandbox is resolved before the
// backend is opened, so a mistake is reported as a usage error, not as a backend failure.
#include "backend/enter.h"
#include "cli/sandbox_verbs.h"
#include "naming/naming.h"
#include "output/yaml.h"

namespace tnk::cli {
namespace {

struct SessionFlags {
  SandboxFlags sandbox;
  std::string audit_log;
  std::vector<std::string> env;   // -e KEY=VALUE
  std::string command;            // shell -c
  bool no_tty = false;            // shell --no-tty
  bool enter_shell = false;       // start --shell
  bool dry_run = false;           // start -n
  bool root = false;              // shell/exec --root
  bool reprovision = false;       // start --reprovision
  std::vector<std::string> argv;  // exec -- ARGV
};

Status check_env_flags(const std::vector<std::string>& assignments) {
  for (const auto& kv : assignments) {
    std::string key, value;
    TNK_RETURN_IF_ERROR(naming::validate_env_assignment(kv, &key, &value));
  }
  return ok_status();
}

bool all_tty(const Context& ctx) {
  return ctx.terminal.stdin_tty && ctx.terminal.stdout_tty && ctx.terminal.stderr_tty;
}

enum class Verb { kStart, kShell, kExec };

sandbox::SessionSpec session_spec(const SessionFlags& flags, Verb verb) {
  sandbox::SessionSpec spec;
  spec.user_env = flags.env;
  spec.identity = flags.root ? session::Identity::kRoot : session::Identity::kAgent;
  if (verb == Verb::kExec) {
    spec.argv = flags.argv;
  } else if (!flags.command.empty()) {
    spec.argv = {"bash", "-lc", flags.command};
    spec.tty = !flags.no_tty;
  } else {
    spec.argv = {"bash", "-l"};
    spec.tty = !flags.no_tty;
  }
  return spec;
}

// start: create, start and provision; shell and exec do the same first (a stopped sandbox starts).
Result<int> enter(Context& ctx, const SessionFlags& flags, Verb verb) {
  backend::EnterRequest request{flags.sandbox.resolve_options(), flags.audit_log, std::nullopt, verb == Verb::kStart,
                                flags.reprovision};
  if (verb != Verb::kStart || flags.enter_shell) request.session = session_spec(flags, verb);
  return backend::enter(ctx, request);
}

// A plan for a cluster (k8s): its objects, for `kubectl apply -f -`. Text and yaml print them as a YAML
// stream whose comments say what the cluster may not give; json prints one `v1` List, ndjson an object a line.
void show_objects(Context& ctx, const sandbox::StartPlan& plan) {
  const auto& objects = *plan.objects;
  switch (ctx.out.format()) {
    case OutputFormat::kJson:
      ctx.out.document(
          {{"apiVersion", "v1"}, {"kind", "List"}, {"metadata", nlohmann::json::object()}, {"items", objects}},
          [](std::ostream&) {});
      return;
    case OutputFormat::kNdjson: ctx.out.list(objects, [](std::ostream&) {}); return;
    case OutputFormat::kText:
    case OutputFormat::kYaml: break;
  }
  std::vector<std::string> comments = {"dry run: sandbox " + plan.id + ", " + plan.backend + " backend, profile " +
                                       plan.profile + " (docs/k8s-backend.md)"};
  for (const auto& note : plan.network_limits) comments.push_back("note: " + note);
  ctx.out.raw(to_yaml_stream(objects, comments));
}

// start -n: what start would do, changing nothing (for lima: the instance YAML and limactl commands; for
// k8s: the objects).
Result<int> show_start_plan(Context& ctx, const SessionFlags& flags) {
  TNK_ASSIGN_OR_RETURN(sandbox::StartPlan plan, backend::start_plan(ctx, flags.sandbox.resolve_options()));
  if (plan.objects) {
    show_objects(ctx, plan);
  } else {
    ctx.out.document(sandbox::to_json(plan), [&](std::ostream& os) { sandbox::print_start_plan(os, plan); });
  }
  return kExitOk;
}

}  // namespace

void add_session_commands(CLI::App& sandbox, CommandTable& table) {
  auto* start = sandbox.add_subcommand("start", "Create (on first use), start and provision the sandbox");
  describe(*start,
           "Create the current project's sandbox on first use, start it, and provision its profile when the "
           "profile or runtime values changed, when asked (--reprovision), or when the token the last run left "
           "inside (~/.local/state/tnk/provision.lock) was deleted. A running sandbox is never re-provisioned "
           "because the endpoint reports another model; --reprovision applies it.",
           "tnk sandbox start --profile pi");
  auto start_flags = std::make_shared<SessionFlags>();
  add_sandbox_flags(*start, start_flags->sandbox, true);
  start->add_option("--audit-log", start_flags->audit_log, "Append NDJSON audit records to this file");
  start->add_flag("--review", start_flags->sandbox.review,
                  "Review mode: the sandbox's writes to the project wait in a layer for `tnk sandbox diff` and "
                  "`apply` (default: the manifest's `workspace:`, else direct)");
  start->add_flag("--shell,--enter", start_flags->enter_shell, "Open an interactive shell once it is ready");
  start->add_flag("--reprovision", start_flags->reprovision,
                  "Run the profile's provisioning again even when its inputs are unchanged (ends the agent's "
                  "processes in a running sandbox first)");
  start->add_flag("-n,--dry-run", start_flags->dry_run,
                  "Show what start would do (lima: its YAML and limactl commands; k8s: the objects, for kubectl "
                  "apply -f -)");
  table.add(start, [start_flags](Context& ctx) -> Result<int> {
    if (start_flags->dry_run) return show_start_plan(ctx, *start_flags);
    if (start_flags->enter_shell && !all_tty(ctx)) {
      return usage_error("--shell requires an interactive terminal", "run `tnk sandbox start` without --shell");
    }
    return enter(ctx, *start_flags, Verb::kStart);
  });

  auto* shell = sandbox.add_subcommand("shell", "Open a shell, or run one command, in the sandbox");
  describe(*shell,
           "Open a login shell in the sandbox, in the directory that matches your cwd, or run one command with "
           "-c. The exit status is the command's own.",
           "tnk sandbox shell --no-tty -c 'ls /workspace'");
  auto shell_flags = std::make_shared<SessionFlags>();
  add_sandbox_flags(*shell, shell_flags->sandbox, false);
  shell->add_option("-c,--command", shell_flags->command, "Run this command with bash -lc instead of a shell");
  shell->add_flag("--no-tty", shell_flags->no_tty, "Do not use a terminal (for scripts and pipes)");
  shell->add_option("-e,--env", shell_flags->env, "Set KEY=VALUE in the session (repeatable; values never logged)")
      ->allow_extra_args(false);
  shell->add_option("--audit-log", shell_flags->audit_log, "Append NDJSON audit records to this file");
  shell->add_flag("--root", shell_flags->root, "Run as root inside the sandbox (still unprivileged on the host)");
  table.add(shell, [shell_flags](Context& ctx) -> Result<int> {
    TNK_RETURN_IF_ERROR(check_env_flags(shell_flags->env));
    if (!shell_flags->no_tty && !all_tty(ctx)) {
      return usage_error("an interactive terminal is required", "use --no-tty for non-interactive commands");
    }
    return enter(ctx, *shell_flags, Verb::kShell);
  });

  auto* exec = sandbox.add_subcommand("exec", "Run a program in the sandbox, without a shell");
  describe(*exec,
           "Run ARGV directly in the sandbox (no shell parses it), streaming stdin, stdout and stderr; the exit "
           "status is the program's own (128+N when killed by signal N).",
           "echo hi | tnk sandbox exec -- cat");
  auto exec_flags = std::make_shared<SessionFlags>();
  // One value per -e: a vector option would take the `--` that starts ARGV as the end of its own list.
  exec->add_option("-e,--env", exec_flags->env, "Set KEY=VALUE for the program (repeatable; values never logged)")
      ->allow_extra_args(false);
  exec->add_option("--audit-log", exec_flags->audit_log, "Append NDJSON audit records to this file");
  exec->add_flag("--root", exec_flags->root, "Run as root inside the sandbox (still unprivileged on the host)");
  exec->add_option("argv", exec_flags->argv, "The program and its arguments, after --");
  table.add(exec, [exec, exec_flags](Context& ctx) -> Result<int> {
    exec_flags->argv = positional_words(*exec);  // as typed: CLI11 has read "[a,b]" as two words
    if (exec_flags->argv.empty()) {
      return usage_error("tnk sandbox exec needs the program to run", "tnk sandbox exec -- PROGRAM [ARG...]");
    }
    TNK_RETURN_IF_ERROR(check_env_flags(exec_flags->env));
    return enter(ctx, *exec_flags, Verb::kExec);
  });
}

}  // namespace tnk::cli
