// libFuzzer target for tnk.toml: the file reader (toml++ and the key walk) applied to the defaults, then
// what the commands derive from the result (the inference URLs as seen from the host and a sandbox).
// Build and run: scripts/fuzz.sh SECONDS config_toml (tests/fuzz/CMakeLists.txt builds it).
// Two bugs of toml++ 3.3.0 (Debian 12), not of tnk, are kept out of the way so the fuzzer goes on past
// them; both inputs are seeds (toml_unreachable.toml, toml_assert_key.toml), and in a user's build
// (NDEBUG) both end in a clean parse error:
// - is_non_ascii_horizontal_whitespace() reaches __builtin_unreachable() for some non-ASCII code points
//   (upstream marzer/tomlplusplus#190, #295, fixed by #305): the sanitizer tree compiles
//   src/config/config_file.cc without UBSan's unreachable check (CMakeLists.txt);
// - parse_key() asserts on a control character after '[': config_file.cc turns toml++'s own asserts off
//   in every build, as NDEBUG does (tnk's Result asserts stay on).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>

#include "config/config.h"
#include "config/config_file.h"
#include "config/config_values.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  tnk::Paths paths;
  paths.home = "/home/fuzz";
  paths.config_dir = "/home/fuzz/.config/tnk";
  paths.state_dir = "/home/fuzz/.local/state/tnk";
  paths.cache_dir = "/home/fuzz/.cache/tnk";
  std::ostringstream err;
  tnk::Log log(err);
  tnk::Config config = tnk::default_config(paths);
  auto applied = tnk::config::apply_config_file(input, config, paths, log);
  if (!applied.ok()) {
    // Every file error names the file and where in it.
    if (applied.error().message.find(config.file.string() + ":") == std::string::npos) std::abort();
    return 0;
  }
  // Invariants the commands rely on.
  if (config.server_port.value == 0) std::abort();
  if (config.sandbox_cpus.value < 1 || config.sandbox_cpus.value > tnk::config::kMaxCpus) std::abort();
  if (config.sandbox_memory_bytes.value == 0 || config.sandbox_disk_bytes.value == 0) std::abort();
  if (config.workspace_root.value.empty() || config.model_dir.value.empty()) std::abort();
  std::string host_url = tnk::host_inference_url(config);
  std::string guest_url = tnk::guest_inference_url(config);
  // A URL accepted from the file keeps its shape when its host is replaced for the sandbox.
  if (config.inference_url.value && !tnk::config::split_url(guest_url)) std::abort();
  if (!config.inference_url.value && !tnk::config::split_url(host_url)) std::abort();
  return 0;
}
