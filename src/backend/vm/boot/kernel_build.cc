// ensure_kernel: compile the guest kernel once, under its lock, in a work directory renamed into place.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <thread>

#include "backend/vm/boot/boot_files_store.h"
#include "backend/vm/boot/kernel.h"
#include "core/files.h"
#include "core/stopwatch.h"
#include "core/unique_fd.h"
#include "image/build_process.h"
#include "image/tree.h"

namespace tnk::vm::boot {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kKernelBuildSpace = 3'000'000'000;  // source ~1.4 GB + objects
constexpr size_t kTailLines = 15;

KernelInfo kernel_info_from(const ArtifactEntry& entry) {
  KernelInfo info;
  info.id = entry.id;
  info.dir = entry.dir;
  info.vmlinux = entry.dir / kVmlinuxFile;
  info.problem = entry.problem;
  if (!entry.problem.empty()) return info;
  const auto& doc = entry.doc;
  info.release = doc.value("release", std::string());
  info.size_bytes = doc.value("size_bytes", uint64_t{0});
  info.built_at = doc.value("built_at", int64_t{0});
  info.build_seconds = doc.value("build_seconds", 0.0);
  info.recipe_hash = doc.value("recipe_hash", std::string());
  info.recipe = doc.value("recipe", nlohmann::json::object());
  return info;
}

// Runs the steps, every line into the build log and progress lines onto `log`. On failure the error
// carries the last lines and names the log.
Status run_steps(const std::vector<KernelStep>& steps, const fs::path& src, const std::string& fragment,
                 const fs::path& log_file, int lock_fd, Log& log, std::chrono::seconds timeout) {
  UniqueFd out(::open(log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!out.valid()) return sys_error(errno, "cannot write " + log_file.string());
  std::deque<std::string> tail;
  KernelProgress progress;
  const Stopwatch clock;
  std::vector<std::string> phases;  // in order, each once: extract, configure, compile
  for (const auto& step : steps) {
    if (phases.empty() || phases.back() != step.phase) phases.push_back(step.phase);
  }
  std::string last_phase;
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto& step = steps[i];
    if (step.argv.back() == kKernelFragmentName) {
      TNK_RETURN_IF_ERROR(write_file_atomic(src / "kernel/configs" / kKernelFragmentName, fragment, 0644));
    }
    if (step.phase != last_phase) {
      const auto number = std::find(phases.begin(), phases.end(), step.phase) - phases.begin() + 1;
      log.info("  " + progress_line(static_cast<int>(number), static_cast<int>(phases.size()),
                                    step.phase + (step.phase == "compile" ? " (a few minutes)" : ""), clock));
    }
    last_phase = step.phase;
    std::string header = "#";
    for (const auto& a : step.argv) header += " " + a;
    (void)write_all(out.get(), header + "\n", log_file.string());
    auto on_line = [&](std::string_view line) {
      (void)write_all(out.get(), std::string(line) + "\n", log_file.string());
      if (auto shown = progress.feed(line)) log.info("    " + *shown + ", " + clock.text());
      log.verbose(std::string(line));
      tail.emplace_back(line);
      if (tail.size() > kTailLines) tail.pop_front();
    };
    image::StreamOptions stream;
    stream.timeout = timeout;
    stream.inherit_fd = lock_fd;
    TNK_ASSIGN_OR_RETURN(int status, image::run_streaming(step.argv, stream, on_line));
    if (status != 0) {
      std::string lines;
      for (const auto& l : tail) lines += "\n  " + l;
      return failed(step.phase + " step `" + header.substr(2) + "` exited with status " + std::to_string(status) +
                        "; its last lines:" + lines,
                    "the full output is in " + log_file.string());
    }
  }
  log.info("    compiled " + std::to_string(progress.files()) + " files");
  return ok_status();
}

// After a successful build: checks the config, moves vmlinux and .config out of the tree, drops the tree.
Result<nlohmann::json> collect(const fs::path& work, const fs::path& src, const KernelRecipe& recipe) {
  TNK_ASSIGN_OR_RETURN(std::string config, read_file(src / ".config"));
  auto missing = missing_settings(recipe.fragment, config);
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += "\n  " + m;
    return failed(
        "the guest kernel's config lacks settings of " + std::string(kKernelFragmentName) + ":" + list,
        "fix kernel/" + std::string(kKernelFragmentName) + " (a typo, or an option whose dependencies are off)");
  }
  if (::rename((src / kVmlinuxFile).c_str(), (work / kVmlinuxFile).c_str()) != 0) {
    return sys_error(errno, "cannot move " + (src / kVmlinuxFile).string());
  }
  TNK_RETURN_IF_ERROR(write_file_atomic(work / kKernelConfigFile, config, 0644));
  auto release_file = read_file(src / "include/config/kernel.release");
  std::string release = release_file ? *release_file : "";
  while (!release.empty() && (release.back() == '\n' || release.back() == ' ')) release.pop_back();
  TNK_RETURN_IF_ERROR(image::remove_tree(src));
  ::chmod((work / kVmlinuxFile).c_str(), 0444);
  struct stat st {};
  if (::stat((work / kVmlinuxFile).c_str(), &st) != 0) return sys_error(errno, "cannot stat the new vmlinux");
  return nlohmann::json{{"release", release}, {"size_bytes", static_cast<uint64_t>(st.st_size)}};
}

Result<KernelInfo> build_locked(const Paths& paths, const KernelRecipe& recipe, const FileLock& lock, Log& log,
                                const KernelBuildOptions& options) {
  const std::string id = kernel_id(recipe);
  TNK_RETURN_IF_ERROR(
      check_free_space_for(artifact_root(paths, kKernelKind), kKernelBuildSpace, "building the guest kernel"));
  int jobs = options.jobs > 0 ? options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  log.info("building guest kernel " + id + " from " + options.tarball.string() + " (" + recipe.source_version +
           ", once per machine; make -j" + std::to_string(jobs) + ")");
  auto build = [&](const fs::path& work) -> Result<nlohmann::json> {
    fs::path src = work / "src";
    TNK_RETURN_IF_ERROR(make_dirs(src, 0755));
    TNK_RETURN_IF_ERROR(run_steps(kernel_build_steps(options.tarball, src, jobs), src, recipe.fragment,
                                  artifact_log_path(paths, kKernelKind, id), lock.fd(), log, options.timeout));
    TNK_ASSIGN_OR_RETURN(nlohmann::json doc, collect(work, src, recipe));
    doc["recipe_hash"] = kernel_recipe_hash(recipe);
    doc["recipe"] = kernel_recipe_to_json(recipe);
    return doc;
  };
  TNK_ASSIGN_OR_RETURN(double seconds, build_artifact(paths, kKernelKind, id, "guest kernel " + id, build));
  TNK_ASSIGN_OR_RETURN(KernelInfo kernel, find_kernel(paths, id));
  log.info("guest kernel " + id + " ready: " + std::to_string(kernel.size_bytes / 1'000'000) + " MB in " +
           std::to_string(std::lround(seconds)) + " s");
  return kernel;
}

}  // namespace

Result<KernelInfo> find_kernel(const Paths& paths, const std::string& id) {
  return find_artifact_as(paths, kKernelKind, id, kVmlinuxFile, kernel_info_from);
}

Result<std::vector<KernelInfo>> list_kernels(const Paths& paths) {
  return list_artifacts_as(paths, kKernelKind, kernel_info_from);
}

Result<KernelInfo> ensure_kernel(const Paths& paths, const KernelRecipe& recipe, Log& log,
                                 const KernelBuildOptions& options) {
  const std::string id = kernel_id(recipe);
  if (!options.force) {
    if (auto found = find_kernel(paths, id)) return found;
  }
  std::error_code ec;
  if (!fs::is_regular_file(options.tarball, ec)) {
    return not_found("the kernel source " + options.tarball.string() + " is missing",
                     std::string("apt-get install ") + kKernelSourcePackage + " (or run scripts/install-deps.sh)");
  }
  TNK_ASSIGN_OR_RETURN(FileLock lock, lock_artifact(paths, kKernelKind, id, options.lock_timeout, log));
  if (!options.force) {
    if (auto found = find_kernel(paths, id)) return found;  // another process built it meanwhile
  }
  return build_locked(paths, recipe, lock, log, options);
}

}  // namespace tnk::vm::boot
