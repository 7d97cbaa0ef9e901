#include "specs/profiles.h"

#include <algorithm>
#include <system_error>

#include "core/strings.h"

namespace tnk::specs {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kLibScriptStem = "provision-lib";
constexpr std::string_view kRootPhaseStem = ".root";  // <p>.root.sh
constexpr std::string_view kSandboxSuffix = "-sandbox";

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

bool is_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

// Regular files (symlinks followed) directly in `dir` whose extension is `ext`, as stems.
std::vector<std::string> stems_in(const fs::path& dir, std::string_view ext) {
  std::vector<std::string> stems;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec)) continue;
    if (it->path().extension() != ext) continue;
    stems.push_back(it->path().stem().string());
  }
  return stems;
}

}  // namespace

Status validate_profile_name(std::string_view name) {
  bool ok = !name.empty() && name.size() <= kMaxProfileNameLength && name.front() != '-' &&
            std::all_of(name.begin(), name.end(), is_name_char);
  if (ok) return ok_status();
  return usage_error("invalid profile name '" + std::string(name) + "': use letters, digits, '-' and '_'",
                     "a profile name has 1 to 64 characters and does not start with '-'");
}

fs::path manifests_dir(const fs::path& config_dir) { return config_dir / kSandboxDir / kManifestsDir; }
fs::path provision_dir(const fs::path& config_dir) { return config_dir / kSandboxDir / kProvisionDir; }
fs::path provision_lib_dir(const fs::path& config_dir) { return provision_dir(config_dir) / kProvisionLibDir; }

std::vector<std::string> list_profiles(const fs::path& config_dir) {
  std::vector<std::string> names{std::string(kBaseProfile)};
  for (auto& stem : stems_in(provision_dir(config_dir), ".sh")) {
    if (stem.ends_with(kRootPhaseStem)) stem.resize(stem.size() - kRootPhaseStem.size());
    if (stem != kLibScriptStem) names.push_back(std::move(stem));
  }
  for (auto& stem : stems_in(manifests_dir(config_dir), ".yaml")) {
    if (stem.size() > kSandboxSuffix.size() && stem.ends_with(kSandboxSuffix)) {
      stem.resize(stem.size() - kSandboxSuffix.size());
    }
    names.push_back(std::move(stem));
  }
  std::erase_if(names, [](const std::string& n) { return !validate_profile_name(n).ok(); });
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

Result<ManifestChoice> find_manifest(const fs::path& config_dir, std::string_view profile) {
  TNK_RETURN_IF_ERROR(validate_profile_name(profile));
  const fs::path dir = manifests_dir(config_dir);
  const std::string name(profile);
  for (const fs::path& candidate : {dir / (name + ".yaml"), dir / (name + std::string(kSandboxSuffix) + ".yaml")}) {
    if (is_file(candidate)) return ManifestChoice{candidate, false};
  }
  if (is_file(dir / kBaseManifest)) return ManifestChoice{dir / kBaseManifest, profile != kBaseProfile};
  return ManifestChoice{};
}

std::optional<fs::path> provision_root_script(const fs::path& config_dir, std::string_view profile) {
  fs::path script = provision_dir(config_dir) / (std::string(profile) + std::string(kRootPhaseStem) + ".sh");
  return is_file(script) ? std::optional<fs::path>(script) : std::nullopt;
}

Result<std::optional<fs::path>> provision_script(const fs::path& config_dir, std::string_view profile) {
  TNK_RETURN_IF_ERROR(validate_profile_name(profile));
  fs::path script = provision_dir(config_dir) / (std::string(profile) + ".sh");
  if (is_file(script)) return std::optional<fs::path>(script);
  const std::vector<std::string> known = list_profiles(config_dir);
  if (std::find(known.begin(), known.end(), profile) != known.end()) return std::optional<fs::path>();
  std::error_code ec;
  std::string hint = fs::exists(provision_dir(config_dir), ec)
                         ? "available profiles: " + join(known) + "; `tnk init --force` refreshes the bundled ones"
                         : "no specs are installed in " + config_dir.string() + "; run `tnk init` to install them";
  return not_found("unknown profile '" + std::string(profile) + "': no " + script.string(), hint);
}

}  // namespace tnk::specs
