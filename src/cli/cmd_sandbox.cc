// tnk sandbox inspect | ls, and the registration of every `tnk sandbox` verb.
#include <functional>
#include <sstream>

#include "backend/inspect.h"
#include "backend/list.h"
#include "cli/command.h"
#include "cli/sandbox_verbs.h"
#include "core/strings.h"
#include "net/live_policy.h"
#include "sandbox/resolve.h"

namespace tnk::cli {
namespace {

void print_network_text(const sandbox::Resolved& r, const nlohmann::json& running,
                        const std::vector<std::string>& limits,
                        const std::function<void(const std::string&, const std::string&)>& row) {
  row("network", to_string(r.network) + " (" + r.network_source + ")");
  if (r.network == NetworkPolicy::kAllowlist) {
    // Each entry as asked for, and how the proxy enforces it; rules added while it runs: `tnk sandbox policy`.
    if (r.manifest.allow_domains.empty()) row("  allow", "<nothing: only the inference endpoint>");
    for (const auto& entry : net::policy_entries(r.manifest.allow_domains, {})) {
      row("  allow", entry.value("entry", "") + "  (" + entry.value("enforced", "") + ")");
    }
  }
  if (running.is_object()) {
    row("  running with", running.value("policy", "?"));
    if (running["proxy"].is_object()) row("  proxy", running["proxy"].value("address", "") + " (HTTP_PROXY inside)");
    for (const auto& route : running.value("routes", nlohmann::json::array())) {
      row("  route", route.value("name", "") + ": " + route.value("url", "") + " -> " + route.value("upstream", ""));
    }
    for (const auto& f : running["forwards"]) {
      row("  forward",
          "127.0.0.1:" + std::to_string(f.value("host_port", 0)) + " -> " + std::to_string(f.value("guest_port", 0)));
    }
  }
  for (const auto& limit : limits) row("  not enforced", limit);
}

void print_inspect_text(std::ostream& os, const sandbox::Resolved& r, const nlohmann::json& running,
                        const std::vector<std::string>& limits,
                        const std::vector<state::ProtectedPath>& protected_paths) {
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
  row("workspace", std::string(r.review ? "review" : "direct") + " (" + r.review_source + ")");
  print_network_text(r, running, limits, row);
  for (const auto& p : protected_paths) row("read-only", p.path + " (" + std::string(state::to_string(p.state)) + ")");
  std::string backend = std::string(to_string(r.backend)) + " (" + r.backend_source + ")";
  row("backend", backend);
  if (!r.backend_why.empty()) row("  why", r.backend_why);
  if (!r.backend_weaker_note.empty()) row("  weaker", r.backend_weaker_note);
  row("inference", r.host_inference_url + " (model " + r.model.model_name + ", from " + r.model.source + ")");
  os << "runtime environment:\n";
  for (const auto& name : sandbox::runtime_env_names()) {
    auto it = r.runtime_env.find(name);
    if (it != r.runtime_env.end()) os << "  " << name << "=" << it->second << '\n';
  }
  if (r.manifest.agent_env.empty()) return;
  std::vector<std::string> apis;
  for (specs::AgentApi api : r.manifest.agent_env) apis.push_back(specs::to_string(api));
  os << "agent settings (" << join(apis) << "):\n";
  for (const auto& [name, value] : sandbox::agent_env_shown(r)) os << "  " << name << "=" << value << '\n';
}

Result<int> run_inspect(Context& ctx, const SandboxFlags& flags) {
  TNK_ASSIGN_OR_RETURN(backend::Inspection seen, backend::inspect(ctx, flags.resolve_options()));
  const sandbox::Resolved& r = seen.resolved;
  for (const auto& note : r.notes) ctx.log.note(note);
  nlohmann::json doc = sandbox::to_json(r);
  doc["network_limits"] = seen.network_limits;
  doc["network"]["running"] = seen.running_network;
  doc["network"]["entries"] = net::policy_entries(r.manifest.allow_domains, {});
  doc["protected_paths"] = state::to_json(seen.protected_paths);
  ctx.out.document(doc, [&](std::ostream& os) {
    print_inspect_text(os, r, seen.running_network, seen.network_limits, seen.protected_paths);
  });
  return kExitOk;
}

Result<int> run_ls(Context& ctx, bool names_only) {
  TNK_ASSIGN_OR_RETURN(std::vector<backend::SandboxRow> rows, backend::list_sandboxes(ctx));
  if (names_only) {
    std::string names;
    for (const auto& row : rows) names += row.name + "\n";
    ctx.out.raw(names);
    return kExitOk;
  }
  ctx.out.list(backend::to_json(rows), [&](std::ostream& os) {
    if (rows.empty()) {
      os << "no sandboxes yet: run `tnk sandbox start` inside a project\n";
      return;
    }
    os << backend::render_table(rows);
  });
  return kExitOk;
}

}  // namespace

sandbox::ResolveOptions SandboxFlags::resolve_options() const {
  sandbox::ResolveOptions options;
  if (!profile.empty()) options.profile = profile;
  if (!backend.empty()) options.backend = backend;
  options.network = network;
  options.review = review;
  return options;
}

void add_sandbox_flags(CLI::App& command, SandboxFlags& flags, bool with_backend) {
  command.add_option("--profile", flags.profile, "Profile to use (default: default_provision_profile in tnk.toml)");
  if (with_backend) {
    command.add_option(
        "--backend", flags.backend,
        "Backend: auto, vm, ns, lima or k8s (k8s: a cluster, no sessions yet; default: default_backend)");
  }
  command
      .add_option_function<std::string>(
          "--network",
          [&flags](const std::string& text) {
            flags.network = parse_network_policy(text);
            if (!flags.network) {
              throw CLI::ValidationError("--network",
                                         "unknown policy '" + text + "'; use one of: " + kNetworkPolicyNames);
            }
          },
          "Network policy when the sandbox starts: none, inference, allowlist or open (default: the profile's "
          "security.network, else default_network)")
      ->type_name("POLICY");
}

namespace {

void add_inspect_command(CLI::App& sandbox, CommandTable& table) {
  auto* inspect = sandbox.add_subcommand("inspect", "Show how tnk resolves the current project's sandbox");
  describe(*inspect,
           "Show the project, sandbox id, profile, manifest, guest mount, runtime variables, backend and state "
           "for the current directory, without changing anything.",
           "tnk sandbox inspect -o json");
  auto inspect_flags = std::make_shared<SandboxFlags>();
  add_sandbox_flags(*inspect, *inspect_flags, true);
  table.add(inspect, [inspect_flags](Context& ctx) { return run_inspect(ctx, *inspect_flags); });
}

void add_ls_command(CLI::App& sandbox, CommandTable& table) {
  auto* ls = sandbox.add_subcommand("ls", "List sandboxes");
  describe(*ls, "List every sandbox with its status, backend, profile, mount and project.", "tnk sandbox ls -o json");
  auto names_only = std::make_shared<bool>(false);
  ls->add_flag("-q,--quiet", *names_only, "Print only sandbox names");
  table.add(ls, [names_only](Context& ctx) { return run_ls(ctx, *names_only); });
}

}  // namespace

void add_sandbox_commands(CLI::App& root, CommandTable& table) {
  auto* sandbox = root.add_subcommand("sandbox", "Manage the current project's sandbox");
  describe(*sandbox, "Manage per-project sandboxes. Run these inside a project below workspace_root.",
           "cd ~/code/homepage && tnk sandbox shell");

  if (table.builds(*sandbox, {"inspect"})) add_inspect_command(*sandbox, table);
  if (table.builds(*sandbox, {"ls"})) add_ls_command(*sandbox, table);
  if (table.builds(*sandbox, {"start", "shell", "exec"})) add_session_commands(*sandbox, table);
  if (table.builds(*sandbox, {"stop", "delete"})) add_sandbox_lifecycle_commands(*sandbox, table);
  if (table.builds(*sandbox, {"allow", "deny", "policy", "pending", "approve", "forward"})) {
    add_network_commands(*sandbox, table);
  }
  if (table.builds(*sandbox, {"agent-ping"})) add_debug_commands(*sandbox, table);
  if (table.builds(*sandbox, {"diff", "apply", "discard"})) add_review_commands(*sandbox, table);
  if (table.builds(*sandbox, {"checkpoint", "checkpoints", "restore", "fork"}))
    add_checkpoint_commands(*sandbox, table);
}

}  // namespace tnk::cli
