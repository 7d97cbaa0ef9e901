// libFuzzer target for what `limactl list --format json` prints (one JSON object per line, or an array):
// parse_instances, then the lookups the lima backend makes on the result.
// Build and run: scripts/fuzz.sh SECONDS limactl_json (tests/fuzz/CMakeLists.txt builds it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "backend/lima/instances.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto parsed = tnk::lima::parse_instances(input);
  if (!parsed.ok()) {
    // Every error names the line at fault.
    if (parsed.error().message.find("limactl list --format json, line ") != 0) std::abort();
    return 0;
  }
  for (const auto& instance : *parsed) {
    // Invariants the backend relies on: every instance has a name, and finding it by name finds one
    // of that name (the first when Lima listed it twice).
    if (instance.name.empty()) std::abort();
    const tnk::lima::Instance* found = tnk::lima::find_instance(*parsed, instance.name);
    if (found == nullptr || found->name != instance.name) std::abort();
    (void)tnk::lima::sandbox_state(found);
  }
  return 0;
}
