// What starting a sandbox gives back (StartOutcome), and what `tnk sandbox start -n` shows without
// starting anything (StartPlan). Shared by every backend (backend/registry.h).
#pragma once

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "state/record.h"

namespace tnk::sandbox {

struct StartOutcome {
  bool already_running = false;
  bool created = false;
  state::SandboxRecord record;
};

// A dry run's plan. Only a backend that drives another program (lima) has commands to show; only one
// that plans for a cluster (k8s) has objects.
struct StartPlan {
  std::string id, backend, profile, state;
  std::optional<std::filesystem::path> yaml_file;
  std::optional<std::string> yaml;
  std::vector<std::vector<std::string>> commands;  // argv, in the order a start runs them
  std::vector<std::string> command_lines;          // the same, as a shell would show them
  std::vector<std::string> network_limits;         // what the backend cannot enforce
  // A backend that plans for a cluster (k8s): the objects, in the order they are applied. When set, they
  // are what the dry run prints (not to_json's document).
  std::optional<std::vector<nlohmann::json>> objects;
};

nlohmann::json to_json(const StartPlan& plan);
void print_start_plan(std::ostream& os, const StartPlan& plan);

}  // namespace tnk::sandbox
