// The vm backend's guest kernel: an uncompressed vmlinux (booted through PVH on QEMU's microvm)
// compiled once per machine from Debian's linux-source-6.1 with `tinyconfig` plus the fragment kept in
// kernel/tnk-guest.config, every driver built in. It is named by the hash of what decides its bytes
// (fragment, source package version, compiler), cached in the kernels store (kernel_disk_store.h) and
// never rebuilt while present.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/log.h"
#include "core/paths.h"
#include "core/result.h"

namespace tnk::vm::boot {

// Bump when the build procedure (kernel_build_steps) changes in a way the recipe does not show.
inline constexpr int kKernelFormat = 1;
inline constexpr const char* kKernelSourcePackage = "linux-source-6.1";
inline constexpr const char* kKernelSourceTarball = "/usr/src/linux-source-6.1.tar.xz";
inline constexpr const char* kKernelFragmentName = "tnk-guest.config";  // also its name in kernel/configs/
inline constexpr const char* kKernelArch = "x86_64";
// Inside a kernel's directory.
inline constexpr const char* kVmlinuxFile = "vmlinux";
inline constexpr const char* kKernelConfigFile = "config";  // the final .config

struct KernelRecipe {
  int format = kKernelFormat;
  std::string fragment;        // the text of kernel/tnk-guest.config
  std::string source_version;  // dpkg version of linux-source-6.1, e.g. "6.1.192-3"
  std::string compiler;        // first line of `gcc --version`
  std::string arch = kKernelArch;
};

nlohmann::json kernel_recipe_to_json(const KernelRecipe& recipe);
std::string kernel_recipe_hash(const KernelRecipe& recipe);  // sha256 hex of the json
// "linux-<upstream version>-<12 hex>", e.g. linux-6.1.192-0123456789ab.
std::string kernel_id(const KernelRecipe& recipe);

// The fragment shipped with tnk: <exe dir>/share/tnk/kernel/ (build tree: copied there by the build),
// then <exe dir>/../share/tnk/kernel/ (an install). not_found when neither exists.
Result<std::filesystem::path> find_kernel_fragment(const std::filesystem::path& self_exe);
// Reads the host: the fragment file, the installed source package's version, gcc's version (the last
// two remembered in `memo_dir` with dpkg's database and the gcc on PATH, see core/file_memo.h).
// not_found (with the apt-get line) when the source package or gcc is missing.
Result<KernelRecipe> current_kernel_recipe(const std::filesystem::path& fragment_file,
                                           const std::filesystem::path& memo_dir);

// The CONFIG_ lines of a fragment: "CONFIG_X=y" and "# CONFIG_X is not set", in order.
std::vector<std::string> fragment_settings(std::string_view fragment);
// The settings of `fragment` that `config` (a final .config) does not have, e.g. a typo or an
// option whose dependencies are off.
std::vector<std::string> missing_settings(std::string_view fragment, std::string_view config);

// One build step: a label for the progress line and the argv (run without a shell).
struct KernelStep {
  std::string phase;  // "extract", "configure", "compile"
  std::vector<std::string> argv;
};
// Pure: the commands that turn the tarball into <src>/vmlinux, with `jobs` parallel compiles.
// The fragment must be written to <src>/kernel/configs/tnk-guest.config before the third step.
std::vector<KernelStep> kernel_build_steps(const std::filesystem::path& tarball, const std::filesystem::path& src,
                                           int jobs);

// Turns the compile step's output into occasional progress lines ("compiling: 420 files (~35%)").
class KernelProgress {
 public:
  std::optional<std::string> feed(std::string_view line);
  int files() const { return files_; }

 private:
  int files_ = 0;
  int shown_percent_ = -10;
};

struct KernelInfo {
  std::string id;
  std::filesystem::path dir, vmlinux;
  std::string release;      // `uname -r` in the guest, e.g. 6.1.192
  uint64_t size_bytes = 0;  // of vmlinux
  int64_t built_at = 0;
  double build_seconds = 0;
  std::string recipe_hash;
  nlohmann::json recipe;
  std::string problem;  // list_kernels only: why the directory is unusable
};

struct KernelBuildOptions {
  bool force = false;
  std::filesystem::path tarball = kKernelSourceTarball;
  int jobs = 0;  // 0: the number of online CPUs
  std::chrono::seconds timeout{std::chrono::minutes(60)};
  std::chrono::seconds lock_timeout{std::chrono::minutes(60)};
};

// Returns the cached kernel of this recipe, compiling it first when absent (a few minutes): under the
// kernel's lock, in a work directory renamed into place on success, progress lines on `log`, the
// whole output in <kernels>/<id>.build.log (named in the error when a step fails).
Result<KernelInfo> ensure_kernel(const Paths& paths, const KernelRecipe& recipe, Log& log,
                                 const KernelBuildOptions& options = {});
Result<KernelInfo> find_kernel(const Paths& paths, const std::string& id);
Result<std::vector<KernelInfo>> list_kernels(const Paths& paths);

}  // namespace tnk::vm::boot
