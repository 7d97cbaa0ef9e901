// The manifest keys only the lima backend reads, under `lima:` (docs/lima-backend.md):
//   lima:
//     containerd: true              # Lima's system containerd (rootful); off unless asked
//     image: {location: URL, arch: aarch64, digest: "sha256:..."}   # instead of template://ubuntu
// Port forwards are the manifest's own `ports:` (specs module), the same on every backend.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "backend/lima/plan.h"
#include "core/result.h"

namespace tnk::lima {

struct LimaOptions {
  bool containerd = false;
  std::optional<PinnedImage> image;
};

// Parses the `lima:` section of a manifest (other keys are the specs module's). Errors name the
// source file and the key.
Result<LimaOptions> parse_lima_options(const std::string& yaml_text, const std::filesystem::path& source);

// The same, read from `manifest_file`; no file means the defaults.
Result<LimaOptions> load_lima_options(const std::optional<std::filesystem::path>& manifest_file);

}  // namespace tnk::lima
