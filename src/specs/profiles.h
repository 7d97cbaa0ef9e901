// Profiles: names, the profiles a specs tree offers, and where a profile's files live.
// The specs tree is the original tnk-specs layout inside the config dir:
//   sandbox.d/manifests/<profile>.yaml | <profile>-sandbox.yaml | base-sandbox.yaml
//   sandbox.d/provision.d/<profile>.sh, sandbox.d/provision.d/lib/ (shared library)
// A profile name is validated before it becomes part of any path (`--profile ../../x` is refused).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tnk::specs {

inline constexpr std::string_view kBaseProfile = "base";
inline constexpr std::string_view kSandboxDir = "sandbox.d";
inline constexpr std::string_view kManifestsDir = "manifests";
inline constexpr std::string_view kProvisionDir = "provision.d";
inline constexpr std::string_view kProvisionLibDir = "lib";
inline constexpr std::string_view kBaseManifest = "base-sandbox.yaml";
inline constexpr size_t kMaxProfileNameLength = 64;

// [A-Za-z0-9_-]{1,64}, not starting with '-'. Usage error otherwise.
Status validate_profile_name(std::string_view name);

std::filesystem::path manifests_dir(const std::filesystem::path& config_dir);
std::filesystem::path provision_dir(const std::filesystem::path& config_dir);
// sandbox.d/provision.d/lib: copied into the sandbox next to the profile's script.
std::filesystem::path provision_lib_dir(const std::filesystem::path& config_dir);

// Every profile the specs offer, sorted and unique: the stem of each *.sh directly in provision.d
// (not provision-lib; <p> of a root phase <p>.root.sh), the profile of each manifest (<p>.yaml,
// <p>-sandbox.yaml), and always `base`. Names that fail validate_profile_name are skipped. Prints nothing.
std::vector<std::string> list_profiles(const std::filesystem::path& config_dir);

// The manifest lookup: <p>.yaml, then <p>-sandbox.yaml, then base-sandbox.yaml (fell_back_to_base),
// then none (path empty). Validates the name first.
struct ManifestChoice {
  std::optional<std::filesystem::path> path;
  bool fell_back_to_base = false;
};
Result<ManifestChoice> find_manifest(const std::filesystem::path& config_dir, std::string_view profile);

// The profile's provision script, its agent phase: provision.d/<p>.sh. nullopt for a profile that has
// no such script but exists (`base`, a profile with only a manifest or only a root phase). not_found,
// listing the available profiles, for a profile that has none of them.
Result<std::optional<std::filesystem::path>> provision_script(const std::filesystem::path& config_dir,
                                                              std::string_view profile);

// The profile's root phase, run as root inside before the agent phase: provision.d/<p>.root.sh, when
// it exists (docs/specs.md, "Two phases"). The name must be valid (validate_profile_name).
std::optional<std::filesystem::path> provision_root_script(const std::filesystem::path& config_dir,
                                                           std::string_view profile);

}  // namespace tnk::specs
