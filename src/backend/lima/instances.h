// What `limactl list --format json` says about Lima's instances: one JSON object per line (Lima's
// format; an array is accepted too), unknown fields ignored. The instance's status there, not
// anything tnk stores, is whether a lima sandbox runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "state/liveness.h"

namespace tnk::lima {

struct Instance {
  std::string name;
  std::string status;  // Lima's own word: "Running", "Stopped", "Broken", ...
  std::string dir;     // the instance directory (~/.lima/<name>)
  std::string vm_type;
  std::string arch;
  unsigned cpus = 0;
  uint64_t memory_bytes = 0;
  uint64_t disk_bytes = 0;
};

// Fails on a line that is not a JSON object with a string "name"; empty text is no instance.
Result<std::vector<Instance>> parse_instances(std::string_view text);

const Instance* find_instance(const std::vector<Instance>& instances, const std::string& name);

// Running -> running, Stopped -> stopped; anything else (Broken, Unknown, ...) -> broken.
// An instance Lima does not list at all is a sandbox whose VM is gone: stopped (start recreates it).
state::SandboxState sandbox_state(const Instance* instance);

}  // namespace tnk::lima
