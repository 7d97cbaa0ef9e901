// libFuzzer target for the sandbox manifests (sandbox.d/manifests/*.yaml): the manifest parser (yaml-cpp
// and the key walk), and the invariants the backends rely on for what it accepts.
// Build and run: scripts/fuzz.sh SECONDS manifest_yaml (tests/fuzz/CMakeLists.txt builds it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "specs/manifest.h"

namespace {

bool is_registry(std::string_view name) {
  for (std::string_view registry : tnk::specs::kRegistryNames) {
    if (name == registry) return true;
  }
  return false;
}

bool domains_valid(const std::vector<std::string>& domains) {
  for (const auto& domain : domains) {
    if (!is_registry(domain) && !tnk::specs::validate_domain(domain).ok()) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  auto parsed = tnk::specs::parse_manifest(input, "/fuzz/manifests/base-sandbox.yaml");
  if (!parsed.ok()) {
    // Every error names the file.
    if (parsed.error().message.find("/fuzz/manifests/base-sandbox.yaml") == std::string::npos) std::abort();
    return 0;
  }
  const tnk::specs::Manifest& manifest = *parsed;
  // Invariants the backends rely on.
  if (!tnk::specs::validate_workspace_mount(manifest.workspace_mount).ok()) std::abort();
  for (const auto& path : manifest.readonly_paths) {
    auto again = tnk::specs::normalize_readonly_path(path);
    if (!again.ok() || *again != path) std::abort();
  }
  if (!domains_valid(manifest.allow_domains) || !domains_valid(manifest.provision_allow_domains)) std::abort();
  if (manifest.cpus && *manifest.cpus == 0) std::abort();
  for (const auto& port : manifest.ports) {
    if (port.guest_port == 0) std::abort();
    auto back = tnk::parse_port_forward(tnk::to_string(port));
    if (!back.ok() || !(*back == port)) std::abort();
  }
  return 0;
}
