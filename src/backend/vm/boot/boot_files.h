// What a vm sandbox boots from, found or built on first need: the guest kernel (kernel/tnk-guest.config
// shipped with tnk) and the base disk of the sandbox's image with the tnk-agent shipped next to tnk.
// One entry point for `tnk image build --vm` and for starting a vm sandbox.
#pragma once

#include <filesystem>
#include <string>

#include "backend/vm/boot/disk.h"
#include "backend/vm/boot/kernel.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/result.h"
#include "image/store.h"

namespace tnk::vm::boot {

// tnk-agent as installed with tnk: <exe dir>/tnk-agent (the build tree and bin/), else
// <exe dir>/../libexec/tnk/tnk-agent. The first candidate when neither exists (errors name it).
std::filesystem::path agent_binary(const std::filesystem::path& self_exe);

// The kernel recipe of this tnk on this host (fragment, source package, compiler).
Result<KernelRecipe> shipped_kernel_recipe(const Paths& paths, const std::filesystem::path& self_exe);

struct VmBootFiles {
  KernelInfo kernel;
  DiskInfo disk;
  bool kernel_built = false;  // by this call
  bool disk_built = false;
};

struct VmBootFilesOptions {
  bool force_kernel = false;  // compile the kernel again even when present
};

// Kernel first (minutes, once per machine), then the disk (a second). Progress on `log`.
Result<VmBootFiles> ensure_vm_boot_files(const Paths& paths, const image::ImageInfo& image,
                                         const std::filesystem::path& self_exe, Log& log,
                                         const VmBootFilesOptions& options = {});

}  // namespace tnk::vm::boot
