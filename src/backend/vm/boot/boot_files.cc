#include "backend/vm/boot/boot_files.h"

namespace tnk::vm::boot {

namespace fs = std::filesystem;

fs::path agent_binary(const fs::path& self_exe) {
  fs::path dir = self_exe.parent_path();
  fs::path beside = dir / "tnk-agent";
  fs::path libexec = dir.parent_path() / "libexec/tnk/tnk-agent";
  std::error_code ec;
  if (!fs::is_regular_file(beside, ec) && fs::is_regular_file(libexec, ec)) return libexec;
  return beside;
}

Result<KernelRecipe> shipped_kernel_recipe(const Paths& paths, const fs::path& self_exe) {
  TNK_ASSIGN_OR_RETURN(fs::path fragment, find_kernel_fragment(self_exe));
  return current_kernel_recipe(fragment, paths.memo_dir());
}

Result<VmBootFiles> ensure_vm_boot_files(const Paths& paths, const image::ImageInfo& image, const fs::path& self_exe,
                                         Log& log, const VmBootFilesOptions& options) {
  VmBootFiles files;
  TNK_ASSIGN_OR_RETURN(KernelRecipe recipe, shipped_kernel_recipe(paths, self_exe));
  files.kernel_built = options.force_kernel || !find_kernel(paths, kernel_id(recipe)).ok();
  KernelBuildOptions kernel_options;
  kernel_options.force = options.force_kernel;
  TNK_ASSIGN_OR_RETURN(files.kernel, ensure_kernel(paths, recipe, log, kernel_options));
  const fs::path agent = agent_binary(self_exe);
  if (auto sha = agent_sha256(paths, agent)) {
    files.disk_built = !find_disk(paths, disk_id(image.id, *sha)).ok();
  }
  TNK_ASSIGN_OR_RETURN(files.disk, ensure_disk(paths, image, agent, log));
  return files;
}

}  // namespace tnk::vm::boot
