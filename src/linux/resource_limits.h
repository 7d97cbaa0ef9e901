// A sandbox's resource limits, as the manifest states them: what the cgroups a start makes carry
// (linux/cgroups.h), the same for an ns sandbox's processes and for a vm sandbox's host processes.
#pragma once

#include <cstdint>
#include <optional>

namespace tnk::linux {

struct Limits {
  std::optional<uint64_t> memory_bytes;
  std::optional<double> cpus;
  uint64_t pids = 4096;
};

}  // namespace tnk::linux
