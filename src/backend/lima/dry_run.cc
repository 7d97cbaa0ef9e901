// `tnk sandbox start -n` on lima: the instance YAML and the limactl commands. Reads only (the lima state comes from
// `limactl list`).
#include "backend/lima/lifecycle.h"
#include "sandbox/provision.h"
#include "specs/profiles.h"
#include "state/store.h"

namespace tnk::lima {
namespace {

// The limactl commands a start of a sandbox in state `now` runs, in order.
void add_start_commands(sandbox::StartPlan& plan, const sandbox::Resolved& r, const std::filesystem::path& yaml_file) {
  plan.commands.push_back(lima::list_argv());
  if (r.state == state::SandboxState::kRunning) return;
  if (r.state == state::SandboxState::kAbsent) plan.commands.push_back(lima::create_argv(r.id, yaml_file));
  plan.commands.push_back(lima::start_argv(r.id));
  plan.commands.push_back(lima::list_argv());
}

Status add_provision_commands(Context& ctx, sandbox::StartPlan& plan, const sandbox::Resolved& r) {
  TNK_ASSIGN_OR_RETURN(auto files, sandbox::read_provision_files(ctx, r));
  if (!files) return ok_status();
  sandbox::ProvisionFingerprint fingerprint = sandbox::provision_fingerprint(r, *files);
  if (r.record && r.record->provision_fingerprint == fingerprint.full) return ok_status();
  // The commands provision_lima_if_needed runs (session.cc), for showing: every file is copied in
  // before the first phase runs.
  plan.commands.push_back(lima::prepare_provision_dir_argv(r.id));
  for (const auto& [relative, contents] : files->files) {
    plan.commands.push_back(
        lima::copy_argv(provision_host_file(ctx, relative), r.id, lima::guest_provision_path(relative)));
  }
  for (const sandbox::ProvisionPhase& phase : sandbox::provision_phases(*files)) {
    plan.commands.push_back(
        lima::shell_argv(r.id, r.guest_workdir, sandbox::session_environment(ctx.env, r, {}),
                         {"bash", "-c", "<the provisioning runner>", lima::guest_provision_path(phase.script_name)},
                         false, phase.identity == session::Identity::kRoot));
  }
  return ok_status();
}

}  // namespace

Result<sandbox::StartPlan> lima_start_plan(Context& ctx, const sandbox::Resolved& r) {
  sandbox::StartPlan plan;
  plan.id = r.id;
  plan.backend = to_string(r.backend);
  plan.profile = r.profile;
  plan.state = state::to_string(r.state);
  TNK_ASSIGN_OR_RETURN(auto spec, lima_instance_spec(ctx, r));
  TNK_ASSIGN_OR_RETURN(plan.yaml, lima::instance_yaml(spec));
  plan.yaml_file = state::Store(ctx.paths.sandboxes_dir()).file(r.id, lima::kInstanceYamlFile);
  add_start_commands(plan, r, *plan.yaml_file);
  TNK_RETURN_IF_ERROR(add_provision_commands(ctx, plan, r));
  plan.network_limits = lima::network_limits(r.network);
  for (const auto& argv : plan.commands) plan.command_lines.push_back(lima::display_command(argv));
  return plan;
}

}  // namespace tnk::lima
