#include "sandbox/start.h"

namespace tnk::sandbox {

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
  for (const auto& line : plan.command_lines) os << line << "\n";
  os << "# what Lima cannot enforce from the host:\n";
  for (const auto& limit : plan.network_limits) os << "#   " << limit << "\n";
}

}  // namespace tnk::sandbox
