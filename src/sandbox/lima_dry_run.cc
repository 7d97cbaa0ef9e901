// `tnk sandbox start -n`: the plan, printed. Reads only (the lima state comes from `limactl list`).
#include <ostream>

#include "sandbox/lima_lifecycle.h"
#include "sandbox/provision.h"
#include "state/store.h"

namespace tnk::sandbox {
namespace {

// The limactl commands a start of a sandbox in state `now` runs, in order.
void add_start_commands(StartPlan& plan, const Resolved& r, const std::filesystem::path& yaml_file) {
  plan.commands.push_back(lima::list_argv());
  if (r.state == state::SandboxState::kRunning) return;
  if (r.state == state::SandboxState::kAbsent) plan.commands.push_back(lima::create_argv(r.id, yaml_file));
  plan.commands.push_back(lima::start_argv(r.id));
  plan.commands.push_back(lima::list_argv());
}

Status add_provision_commands(Context& ctx, StartPlan& plan, const Resolved& r) {
  TNK_ASSIGN_OR_RETURN(std::string fingerprint, provision_fingerprint(ctx, r));
  if (fingerprint.empty() || (r.record && r.record->provision_fingerprint == fingerprint)) return ok_status();
  // The same commands provision_lima_if_needed runs (lima_session.cc), for showing.
  plan.commands.push_back(lima::shell_argv(
      r.id, "/", {}, {"sh", "-c", "rm -rf -- \"$1\" && mkdir -p -- \"$1/lib\"", "sh", lima::kGuestProvisionDir},
      false));
  std::string script = std::string(lima::kGuestProvisionDir) + "/" + r.provision_script->filename().string();
  plan.commands.push_back(lima::copy_argv(*r.provision_script, r.id, script));
  plan.commands.push_back(lima::shell_argv(r.id, r.guest_workdir, session_environment(ctx.env, r, {}),
                                           {"bash", "-c", "<the provisioning runner>", script}, false));
  return ok_status();
}

}  // namespace

Result<StartPlan> start_plan(Context& ctx, const Resolved& r) {
  StartPlan plan;
  plan.id = r.id;
  plan.backend = r.backend;
  plan.profile = r.profile;
  plan.state = state::to_string(r.state);
  if (r.backend != kLimaBackend) return plan;
  TNK_ASSIGN_OR_RETURN(auto spec, lima_instance_spec(ctx, r));
  TNK_ASSIGN_OR_RETURN(plan.yaml, lima::instance_yaml(spec));
  plan.yaml_file = state::Store(ctx.paths.sandboxes_dir()).file(r.id, lima::kInstanceYamlFile);
  add_start_commands(plan, r, *plan.yaml_file);
  TNK_RETURN_IF_ERROR(add_provision_commands(ctx, plan, r));
  plan.network_limits = lima::network_limits(r.network);
  return plan;
}

nlohmann::json to_json(const StartPlan& plan) {
  nlohmann::json commands = nlohmann::json::array();
  for (const auto& argv : plan.commands) commands.push_back(argv);
  return {
      {"id", plan.id},
      {"backend", plan.backend},
      {"profile", plan.profile},
      {"state", plan.state},
      {"yaml_file", plan.yaml_file ? nlohmann::json(plan.yaml_file->string()) : nlohmann::json()},
      {"yaml", plan.yaml ? nlohmann::json(*plan.yaml) : nlohmann::json()},
      {"commands", commands},
      {"network_limits", plan.network_limits},
  };
}

void print_start_plan(std::ostream& os, const StartPlan& plan) {
  os << "# dry run: sandbox " << plan.id << ", " << plan.backend << " backend, profile " << plan.profile << ", now "
     << plan.state << "\n";
  if (!plan.yaml) {
    os << "# nothing more to show: only the lima backend prints its plan\n";
    return;
  }
  os << "# the Lima instance YAML, written to " << plan.yaml_file->string() << " on create:\n" << *plan.yaml;
  os << "# the limactl commands, in order:\n";
  for (const auto& argv : plan.commands) os << lima::display_command(argv) << "\n";
  os << "# what Lima cannot enforce from the host:\n";
  for (const auto& limit : plan.network_limits) os << "#   " << limit << "\n";
}

}  // namespace tnk::sandbox
