#include "backend/lima/manifest_keys.h"

#include <yaml-cpp/yaml.h>

#include <exception>

#include "core/files.h"
#include "specs/manifest.h"

namespace tnk::lima {
namespace {

Error key_error(const std::filesystem::path& source, const std::string& key, const std::string& what,
                const std::string& hint) {
  return failed(source.string() + ": " + key + ": " + what, hint);
}

Result<PinnedImage> pinned_image(const YAML::Node& node, const std::filesystem::path& source) {
  const std::string hint = "for example `image: {location: https://.../ubuntu.img, arch: aarch64, digest: sha256:...}`";
  if (!node.IsMap() || !node["location"] || !node["location"].IsScalar()) {
    return key_error(source, "lima.image", "must be a mapping with a `location`", hint);
  }
  PinnedImage image;
  image.location = node["location"].Scalar();
  if (node["arch"] && node["arch"].IsScalar()) image.arch = node["arch"].Scalar();
  if (node["digest"] && node["digest"].IsScalar()) image.digest = node["digest"].Scalar();
  if (!image.digest.empty() && !image.digest.starts_with("sha256:")) {
    return key_error(source, "lima.image.digest", "must start with sha256:", hint);
  }
  return image;
}

Result<LimaOptions> options_from(const YAML::Node& lima, const std::filesystem::path& source) {
  LimaOptions options;
  if (!lima || lima.IsNull()) return options;
  if (!lima.IsMap())
    return key_error(source, specs::kLimaSection, "must be a mapping of keys", "see docs/lima-backend.md");
  if (const auto& containerd = lima["containerd"]; containerd && !containerd.IsNull()) {
    bool value = false;
    if (!containerd.IsScalar() || !YAML::convert<bool>::decode(containerd, value)) {
      return key_error(source, "lima.containerd", "must be true or false", "for example `containerd: true`");
    }
    options.containerd = value;
  }
  if (const auto& image = lima["image"]; image && !image.IsNull()) {
    TNK_ASSIGN_OR_RETURN(auto pinned, pinned_image(image, source));
    options.image = pinned;
  }
  return options;
}

}  // namespace

Result<LimaOptions> parse_lima_options(const std::string& yaml_text, const std::filesystem::path& source) {
  try {
    YAML::Node root = YAML::Load(yaml_text);
    if (!root.IsMap()) return LimaOptions{};
    return options_from(root[specs::kLimaSection], source);
  } catch (const std::exception& e) {
    return failed(source.string() + ": " + e.what(), "fix the manifest's YAML");
  }
}

Result<LimaOptions> load_lima_options(const std::optional<std::filesystem::path>& manifest_file) {
  if (!manifest_file) return LimaOptions{};
  TNK_ASSIGN_OR_RETURN(std::string text, read_file(*manifest_file));
  return parse_lima_options(text, *manifest_file);
}

}  // namespace tnk::lima
