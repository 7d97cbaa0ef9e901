// `tnk init`: installs a specs tree (the bundled one, a local directory or a git URL) into the config
// dir. Only the managed directories are written; tnk.toml and everything else there is never touched.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/log.h"
#include "core/result.h"

namespace tnk::specs {

// The directories of a specs tree that `tnk init` owns in the config dir.
inline constexpr std::string_view kManagedDirs[] = {"sandbox.d", "provider.d", "clients"};

struct InstallOptions {
  std::string source;                 // empty = the bundled specs; an existing directory; otherwise a git URL
  bool force = false;                 // replace managed dirs that are already installed
  std::filesystem::path bundled_dir;  // bundled_specs_dir(); used when source is empty
};

struct InstallReport {
  std::string source;                  // "bundled specs (/usr/share/tnk/specs)", "directory /x", "git https://..."
  std::vector<std::string> installed;  // managed dirs written, e.g. {"sandbox.d", "provider.d"}
  std::string revision;                // specs_revision() after the install
};

// Stages the source in a temporary directory next to config_dir (same filesystem, so the final
// renames cannot fail with EXDEV), then moves each managed dir in. Without `force`, refuses (usage
// error) when any managed dir is already installed; a config dir holding only tnk.toml is fine. With
// `force`, each managed dir is swapped for the new one; if a step fails, the ones already swapped are
// put back, so a failed install leaves the previous specs as they were. A git source is cloned with
// `git clone --depth 1` (120 s, killed after that) and its commit recorded in .specs-rev.
Result<InstallReport> install_specs(const std::filesystem::path& config_dir, const InstallOptions& options, Log& log);

// Where the bundled specs are, given the running executable (/proc/self/exe): the first directory
// that exists of <exe_dir>/share/tnk/specs (build tree: copied there by the build) and
// <exe_dir>/../share/tnk/specs (an install, wherever its prefix is). Empty when neither exists.
std::filesystem::path bundled_specs_dir(const std::filesystem::path& self_exe);

}  // namespace tnk::specs
