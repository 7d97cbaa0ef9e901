// tnk sandbox inspect | ls, and the registration of every `tnk sandbox` verb.
#include <sstream>

#include "audit/events.h"
#include "backend/backend.h"
#include "cli/command.h"
#include "cli/sandbox_list.h"
#include "cli/sandbox_verbs.h"
#include "sandbox/audit_target.h"
#include "sandbox/lifecycle.h"
#include "sandbox/provision.h"
#include "sandbox/resolve.h"
#include "state/store.h"

namespace tnk::cli {
namespace {

void print_inspect_text(std::ostream& os, const sandbox::Resolved& r) {
  auto row = [&](const std::string& key, const std::string& value) {
    os << key << std::string(key.size() < 18 ? 18 - key.size() : 1, ' ') << value << '\n';
  };
  row("sandbox", r.id);
  row("state", state::to_string(r.state));
  row("project", r.project.dir.string());
  row("profile", r.profile + " (" + r.profile_source + ")");
  row("manifest", r.manifest_file ? r.manifest_file->string() : "<none: defaults>");
  row("provision script", r.provision_script ? r.provision_script->string() : "<none>");
  row("mount", r.manifest.workspace_mount);
  row("workdir", r.guest_workdir);
  row("network", to_string(r.network));
  std::string backend = r.backend + " (" + r.backend_source + ")";
  row("backend", backend);
  if (!r.backend_why.empty()) row("  why", r.backend_why);
  if (!r.backend_weaker_note.empty()) row("  weaker", r.backend_weaker_note);
  row("inference", r.host_inference_url + " (model " + r.model.model_name + ", from " + r.model.source + ")");
  os << "runtime environment:\n";
  for (const auto& name : sandbox::runtime_env_names()) {
    auto it = r.runtime_env.find(name);
    if (it != r.runtime_env.end()) os << "  " << name << "=" << it->second << '\n';
  }
}

Result<int> run_inspect(Context& ctx, const SandboxFlags& flags) {
  TNK_ASSIGN_OR_RETURN(sandbox::Resolved r, sandbox::resolve(ctx, flags.resolve_options()));
  for (const auto& note : r.notes) ctx.log.note(note);
  ctx.out.document(sandbox::to_json(r), [&](std::ostream& os) { print_inspect_text(os, r); });
  return kExitOk;
}

Result<int> run_ls(Context& ctx, bool names_only) {
  TNK_ASSIGN_OR_RETURN(std::vector<SandboxRow> rows, list_sandboxes(ctx));
  if (names_only) {
    std::string names;
    for (const auto& row : rows) names += row.name + "\n";
    ctx.out.raw(names);
    return kExitOk;
  }
  ctx.out.list(to_json(rows), [&](std::ostream& os) {
    if (rows.empty()) {
      os << "no sandboxes yet: run `tnk sandbox start` inside a project\n";
      return;
    }
    os << render_table(rows);
  });
  return kExitOk;
}

}  // namespace

sandbox::ResolveOptions SandboxFlags::resolve_options() const {
  sandbox::ResolveOptions options;
  if (!profile.empty()) options.profile = profile;
  if (!backend.empty()) options.backend = backend;
  return options;
}

Status start_and_provision(Context& ctx, sandbox::Resolved& r, std::optional<audit::AuditWriter>& audit) {
  auto began = std::chrono::steady_clock::now();
  TNK_ASSIGN_OR_RETURN(auto outcome, sandbox::ensure_running(ctx, r));
  if (!outcome.already_running) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began);
    ctx.log.info((outcome.created ? "created and started " : "started ") + r.id + " (" + r.backend + " backend) in " +
                 std::to_string(ms.count()) + " ms");
    sandbox::audit_append(ctx, audit,
                          audit::sandbox_start(r.id, r.backend, r.profile, outcome.record.project_dir.string()));
  }
  r.record = outcome.record;
  r.state = state::SandboxState::kRunning;
  return sandbox::provision_if_needed(ctx, r, audit);
}

Status stop_supervised(const Paths& paths, const std::string& id, const std::string& backend,
                       std::chrono::milliseconds grace, Log& log) {
  if (backend != "ns") {
    TNK_ASSIGN_OR_RETURN(auto opened, backend::open_backend(backend));
    return failed("cannot stop " + id + ": the '" + opened->name() + "' backend is not available in this build");
  }
  return sandbox::stop_sandbox(paths, id, grace, log);
}

void record_stop(Context& ctx, const std::string& id, const std::string& reason) {
  auto audit = sandbox::open_audit(ctx, "", id);
  if (audit) sandbox::audit_append(ctx, *audit, audit::sandbox_stop(id, reason));
  ctx.log.info("stopped " + id);
}

Result<sandbox::Resolved> resolve_to_run(Context& ctx, const sandbox::ResolveOptions& options) {
  TNK_ASSIGN_OR_RETURN(sandbox::Resolved r, sandbox::resolve(ctx, options));
  for (const auto& note : r.notes) ctx.log.note(note);
  if (!r.backend_weaker_note.empty()) ctx.log.note(r.backend_weaker_note);
  return r;
}

void add_sandbox_flags(CLI::App& command, SandboxFlags& flags, bool with_backend) {
  command.add_option("--profile", flags.profile, "Profile to use (default: default_provision_profile in tnk.toml)");
  if (with_backend) {
    command.add_option("--backend", flags.backend, "Backend: auto, vm, ns or lima (default: default_backend)");
  }
}

void add_sandbox_commands(CLI::App& root, CommandTable& table) {
  auto* sandbox = root.add_subcommand("sandbox", "Manage the current project's sandbox");
  describe(*sandbox, "Manage per-project sandboxes. Run these inside a project below workspace_root.",
           "cd ~/code/homepage && tnk sandbox shell");

  auto* inspect = sandbox->add_subcommand("inspect", "Show how tnk resolves the current project's sandbox");
  describe(*inspect,
           "Show the project, sandbox id, profile, manifest, guest mount, runtime variables, backend and state "
           "for the current directory, without changing anything.",
           "tnk sandbox inspect -o json");
  auto inspect_flags = std::make_shared<SandboxFlags>();
  add_sandbox_flags(*inspect, *inspect_flags, true);
  table.add(inspect, [inspect_flags](Context& ctx) { return run_inspect(ctx, *inspect_flags); });

  auto* ls = sandbox->add_subcommand("ls", "List sandboxes");
  describe(*ls, "List every sandbox with its status, backend, profile, mount and project.", "tnk sandbox ls -o json");
  auto names_only = std::make_shared<bool>(false);
  ls->add_flag("-q,--quiet", *names_only, "Print only sandbox names");
  table.add(ls, [names_only](Context& ctx) { return run_ls(ctx, *names_only); });

  add_session_commands(*sandbox, table);
  add_sandbox_lifecycle_commands(*sandbox, table);
}

}  // namespace tnk::cli
