#include "backend/lima/instances.h"

#include <nlohmann/json.hpp>

namespace tnk::lima {
namespace {

template <class T>
T number_or_zero(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return 0;
  auto value = it->get<int64_t>();
  return value < 0 ? 0 : static_cast<T>(value);
}

std::string string_or_empty(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Result<Instance> instance_from(const nlohmann::json& object, size_t line) {
  std::string where = "limactl list --format json, line " + std::to_string(line);
  if (!object.is_object()) return failed(where + ": expected a JSON object per instance");
  Instance instance;
  instance.name = string_or_empty(object, "name");
  if (instance.name.empty()) return failed(where + ": an instance without a \"name\"");
  instance.status = string_or_empty(object, "status");
  instance.dir = string_or_empty(object, "dir");
  instance.vm_type = string_or_empty(object, "vmType");
  instance.arch = string_or_empty(object, "arch");
  instance.cpus = number_or_zero<unsigned>(object, "cpus");
  instance.memory_bytes = number_or_zero<uint64_t>(object, "memory");
  instance.disk_bytes = number_or_zero<uint64_t>(object, "disk");
  return instance;
}

}  // namespace

Result<std::vector<Instance>> parse_instances(std::string_view text) {
  std::vector<Instance> instances;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto parsed = nlohmann::json::parse(line, nullptr, false);
    if (parsed.is_discarded()) {
      return failed("limactl list --format json, line " + std::to_string(line_no) + ": not JSON",
                    "run `limactl list --format json` to see what it prints; tnk needs Lima 1.0 or newer");
    }
    if (parsed.is_array()) {
      for (const auto& item : parsed) {
        TNK_ASSIGN_OR_RETURN(auto instance, instance_from(item, line_no));
        instances.push_back(std::move(instance));
      }
      continue;
    }
    TNK_ASSIGN_OR_RETURN(auto instance, instance_from(parsed, line_no));
    instances.push_back(std::move(instance));
  }
  return instances;
}

const Instance* find_instance(const std::vector<Instance>& instances, const std::string& name) {
  for (const auto& instance : instances) {
    if (instance.name == name) return &instance;
  }
  return nullptr;
}

state::SandboxState sandbox_state(const Instance* instance) {
  if (instance == nullptr || instance->status == "Stopped") return state::SandboxState::kStopped;
  if (instance->status == "Running") return state::SandboxState::kRunning;
  return state::SandboxState::kBroken;
}

}  // namespace tnk::lima
