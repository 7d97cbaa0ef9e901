// The guest kernel: its recipe and name, the build steps, and the cached build (kernel_build.cc).
#include "backend/vm/boot/kernel.h"

#include <sys/stat.h>

#include <algorithm>
#include <sstream>

#include "audit/sha256.h"
#include "core/file_memo.h"
#include "core/files.h"
#include "core/program_path.h"
#include "core/subprocess.h"

namespace tnk::vm::boot {
namespace {

namespace fs = std::filesystem;

// About how many files `make vmlinux` compiles with the fragment (6.1.192: counted once); only for
// the percentage in the progress lines, which stops at 99 until the build ends.
constexpr int kExpectedCompiledFiles = 970;
constexpr const char* kDpkgDatabase = "/var/lib/dpkg/status";  // rewritten by every package change

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\r\n"));
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  return s;
}

// The first line of a program's stdout; not_found with `hint` when it cannot run.
Result<std::string> first_line_of(const std::vector<std::string>& argv, const std::string& what,
                                  const std::string& hint) {
  ProcessOptions options;
  options.capture_stdout = true;
  options.capture_stderr = true;
  options.timeout = std::chrono::seconds(30);
  auto run = run_process(argv, options);
  if (!run || run->exit_code != 0 || trim(run->out).empty()) return not_found(what + " is not installed", hint);
  std::string out = run->out;
  return trim(out.substr(0, out.find('\n')));
}

}  // namespace

nlohmann::json kernel_recipe_to_json(const KernelRecipe& recipe) {
  return {{"format", recipe.format},
          {"fragment", recipe.fragment},
          {"source_package", kKernelSourcePackage},
          {"source_version", recipe.source_version},
          {"compiler", recipe.compiler},
          {"arch", recipe.arch}};
}

std::string kernel_recipe_hash(const KernelRecipe& recipe) {
  return audit::sha256_hex(kernel_recipe_to_json(recipe).dump());
}

std::string kernel_id(const KernelRecipe& recipe) {
  std::string upstream = recipe.source_version.substr(0, recipe.source_version.rfind('-'));
  std::string clean;
  for (char c : upstream) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '.') clean += c;
  }
  if (clean.empty()) clean = "unknown";
  return "linux-" + clean + "-" + kernel_recipe_hash(recipe).substr(0, 12);
}

Result<fs::path> find_kernel_fragment(const fs::path& self_exe) {
  std::vector<fs::path> candidates;
  if (!self_exe.empty()) {
    candidates.push_back(self_exe.parent_path() / "share/tnk/kernel" / kKernelFragmentName);
    candidates.push_back(self_exe.parent_path().parent_path() / "share/tnk/kernel" / kKernelFragmentName);
  }
  std::error_code ec;
  for (const auto& c : candidates) {
    if (fs::is_regular_file(c, ec)) return c;
  }
  return not_found(std::string("the guest kernel's config fragment (") + kKernelFragmentName + ") is not installed",
                   "reinstall tnk; it belongs in share/tnk/kernel/ next to the binary");
}

Result<KernelRecipe> current_kernel_recipe(const fs::path& fragment_file, const fs::path& memo_dir) {
  KernelRecipe recipe;
  TNK_ASSIGN_OR_RETURN(recipe.fragment, read_file(fragment_file));
  const std::string install = std::string("apt-get install ") + kKernelSourcePackage +
                              " gcc make bc flex bison libelf-dev (or run scripts/install-deps.sh)";
  auto source_version = [&] {
    return first_line_of({"dpkg-query", "-W", "-f=${Version}\n", kKernelSourcePackage},
                         std::string("the kernel source (") + kKernelSourcePackage + ")", install);
  };
  TNK_ASSIGN_OR_RETURN(recipe.source_version,
                       memoized(memo_dir / "kernel-source-version.json", {kDpkgDatabase}, source_version));
  const char* path_var = std::getenv("PATH");
  std::string gcc = find_on_path("gcc", path_var ? path_var : "");
  auto gcc_version = [&] { return first_line_of({"gcc", "--version"}, "gcc", install); };
  TNK_ASSIGN_OR_RETURN(recipe.compiler, memoized(memo_dir / "gcc-version.json", {gcc}, gcc_version));
  return recipe;
}

std::vector<std::string> fragment_settings(std::string_view fragment) {
  std::vector<std::string> out;
  std::istringstream lines{std::string(fragment)};
  std::string line;
  while (std::getline(lines, line)) {
    line = trim(line);
    bool unset = line.starts_with("# CONFIG_") && line.ends_with(" is not set");
    if (line.starts_with("CONFIG_") || unset) out.push_back(line);
  }
  return out;
}

std::vector<std::string> missing_settings(std::string_view fragment, std::string_view config) {
  std::vector<std::string> have = fragment_settings(config);
  std::sort(have.begin(), have.end());
  std::vector<std::string> missing;
  for (const auto& s : fragment_settings(fragment)) {
    if (std::binary_search(have.begin(), have.end(), s)) continue;
    // An unset option may also be absent from .config altogether (its menu is off).
    if (s.starts_with("# ")) {
      std::string name = s.substr(2, s.find(' ', 2) - 2);
      bool set = std::any_of(have.begin(), have.end(), [&](const std::string& h) { return h.starts_with(name + "="); });
      if (!set) continue;
    }
    missing.push_back(s);
  }
  return missing;
}

std::vector<KernelStep> kernel_build_steps(const fs::path& tarball, const fs::path& src, int jobs) {
  const std::string arch = std::string("ARCH=") + kKernelArch;
  return {
      {"extract", {"tar", "-xf", tarball.string(), "-C", src.string(), "--strip-components=1"}},
      {"configure", {"make", "-C", src.string(), arch, "tinyconfig"}},
      {"configure", {"make", "-C", src.string(), arch, kKernelFragmentName}},
      {"compile", {"make", "-C", src.string(), arch, "-j" + std::to_string(std::max(1, jobs)), kVmlinuxFile}},
  };
}

std::optional<std::string> KernelProgress::feed(std::string_view line) {
  if (!line.starts_with("  CC ")) return std::nullopt;
  ++files_;
  int percent = std::min(99, files_ * 100 / kExpectedCompiledFiles);
  if (percent / 10 == shown_percent_ / 10) return std::nullopt;
  shown_percent_ = percent;
  return "compiling: " + std::to_string(files_) + " files (~" + std::to_string(percent) + "%)";
}

}  // namespace tnk::vm::boot
