#include "cli/image_vm.h"

#include <algorithm>
#include <ctime>

#include "backend/vm/boot/boot_files.h"
#include "backend/vm/boot/boot_files_store.h"
#include "backend/vm/boot/disk.h"
#include "backend/vm/boot/kernel.h"
#include "output/output.h"

namespace tnk::cli {
namespace {

std::string seconds(double s) { return std::to_string(static_cast<long>(s + 0.5)) + "s"; }

// The kernel id of this tnk on this host; "" when it cannot be told (no source package, ...).
std::string current_kernel_id(Context& ctx) {
  auto recipe = vm::boot::shipped_kernel_recipe(ctx.paths, ctx.self_exe);
  if (!recipe) {
    ctx.log.verbose("cannot tell the current guest kernel: " + recipe.error().message);
    return "";
  }
  return vm::boot::kernel_id(*recipe);
}

// The disk id of `image_id` with the agent shipped with this tnk; "" without an agent.
std::string current_disk_id(Context& ctx, const std::string& image_id) {
  auto sha = vm::boot::agent_sha256(ctx.paths, vm::boot::agent_binary(ctx.self_exe));
  if (!sha || image_id.empty()) return "";
  return vm::boot::disk_id(image_id, *sha);
}

template <class T>
nlohmann::json or_null(bool ok, T value) {
  return ok ? nlohmann::json(value) : nlohmann::json(nullptr);
}

nlohmann::json kernel_item(const vm::boot::KernelInfo& k, bool current) {
  bool ok = k.problem.empty();
  return {{"kind", "kernel"},
          {"id", k.id},
          {"current", current},
          {"path", k.dir.string()},
          {"vmlinux", k.vmlinux.string()},
          {"release", or_null(ok, k.release)},
          {"size_bytes", or_null(ok, k.size_bytes)},
          {"built_at", or_null(ok, k.built_at)},
          {"build_seconds", or_null(ok, k.build_seconds)},
          {"recipe_hash", or_null(ok, k.recipe_hash)},
          {"used_by", nlohmann::json::array()},
          {"problem", ok ? nlohmann::json(nullptr) : nlohmann::json(k.problem)}};
}

nlohmann::json disk_item(const vm::boot::DiskInfo& d, bool current, const std::vector<std::string>& used_by) {
  bool ok = d.problem.empty();
  return {{"kind", "disk"},
          {"id", d.id},
          {"current", current},
          {"path", d.dir.string()},
          {"base", d.base.string()},
          {"image_id", or_null(ok, d.image_id)},
          {"agent_sha256", or_null(ok, d.agent_sha256)},
          {"size_bytes", or_null(ok, d.size_bytes)},
          {"allocated_bytes", or_null(ok, d.allocated_bytes)},
          {"built_at", or_null(ok, d.built_at)},
          {"build_seconds", or_null(ok, d.build_seconds)},
          {"used_by", used_by},
          {"problem", ok ? nlohmann::json(nullptr) : nlohmann::json(d.problem)}};
}

}  // namespace

Result<nlohmann::json> build_vm_files(Context& ctx, const image::ImageInfo& image, bool force, std::string& text) {
  vm::boot::VmBootFilesOptions options;
  options.force_kernel = force;
  TNK_ASSIGN_OR_RETURN(vm::boot::VmBootFiles files,
                       vm::boot::ensure_vm_boot_files(ctx.paths, image, ctx.self_exe, ctx.log, options));
  if (!files.kernel_built) ctx.log.info("guest kernel " + files.kernel.id + " is already built");
  if (!files.disk_built) ctx.log.info("base disk " + files.disk.id + " is already built");
  text += files.kernel.id + "\n" + files.disk.id + "\n";
  return nlohmann::json{{"kernel",
                         {{"id", files.kernel.id},
                          {"built", files.kernel_built},
                          {"path", files.kernel.dir.string()},
                          {"vmlinux", files.kernel.vmlinux.string()},
                          {"release", files.kernel.release},
                          {"size_bytes", files.kernel.size_bytes}}},
                        {"disk",
                         {{"id", files.disk.id},
                          {"built", files.disk_built},
                          {"path", files.disk.dir.string()},
                          {"base", files.disk.base.string()},
                          {"size_bytes", files.disk.size_bytes},
                          {"allocated_bytes", files.disk.allocated_bytes}}}};
}

nlohmann::json plan_vm_files(Context& ctx, const std::string& image_id) {
  std::string kernel = current_kernel_id(ctx);
  std::string disk = current_disk_id(ctx, image_id);
  auto dir_of = [&](const vm::boot::ArtifactKind& kind, const std::string& id) {
    return id.empty() ? nlohmann::json(nullptr)
                      : nlohmann::json((vm::boot::artifact_root(ctx.paths, kind) / id).string());
  };
  return {{"kernel",
           {{"id", kernel.empty() ? nlohmann::json(nullptr) : nlohmann::json(kernel)},
            {"exists", !kernel.empty() && vm::boot::find_kernel(ctx.paths, kernel).ok()},
            {"path", dir_of(vm::boot::kKernelKind, kernel)}}},
          {"disk",
           {{"id", disk.empty() ? nlohmann::json(nullptr) : nlohmann::json(disk)},
            {"exists", !disk.empty() && vm::boot::find_disk(ctx.paths, disk).ok()},
            {"path", dir_of(vm::boot::kDiskKind, disk)}}}};
}

std::vector<std::string> disk_users(Context& ctx, const image::ImageUsers& users, const std::string& id) {
  std::vector<std::string> out = users.users_of(id);
  if (auto disk = vm::boot::find_disk(ctx.paths, id); disk && !disk->image_id.empty()) {
    for (const auto& s : users.users_of(disk->image_id)) {
      if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    }
  }
  return out;
}

Result<VmListing> list_vm_files(Context& ctx, const image::ImageUsers& users, const std::string& current_image) {
  VmListing listing;
  TNK_ASSIGN_OR_RETURN(std::vector<vm::boot::KernelInfo> kernels, vm::boot::list_kernels(ctx.paths));
  TNK_ASSIGN_OR_RETURN(std::vector<vm::boot::DiskInfo> disks, vm::boot::list_disks(ctx.paths));
  const int64_t now = ::time(nullptr);
  std::vector<std::vector<std::string>> kernel_rows, disk_rows;
  std::string kernel_now = kernels.empty() ? "" : current_kernel_id(ctx);
  for (const auto& k : kernels) {
    bool current = k.id == kernel_now;
    listing.items.push_back(kernel_item(k, current));
    listing.ids.push_back(k.id);
    if (!k.problem.empty()) ctx.log.warn(k.problem);
    kernel_rows.push_back({k.id, k.problem.empty() ? megabytes(k.size_bytes) : "-",
                           k.problem.empty() ? age(k.built_at, now) : "-",
                           k.problem.empty() ? seconds(k.build_seconds) : "-", current ? "yes" : ""});
  }
  std::string disk_now = disks.empty() ? "" : current_disk_id(ctx, current_image);
  for (const auto& d : disks) {
    bool current = d.id == disk_now;
    auto used_by = disk_users(ctx, users, d.id);
    listing.items.push_back(disk_item(d, current, used_by));
    listing.ids.push_back(d.id);
    if (!d.problem.empty()) ctx.log.warn(d.problem);
    bool ok = d.problem.empty();
    disk_rows.push_back({d.id, ok ? megabytes(d.size_bytes) : "-", ok ? megabytes(d.allocated_bytes) : "-",
                         ok ? age(d.built_at, now) : "-", current ? "yes" : "", std::to_string(used_by.size())});
  }
  if (!kernel_rows.empty()) {
    listing.text += "\n" + render_table({"KERNEL", "SIZE", "AGE", "BUILT-IN", "CURRENT"}, kernel_rows);
  }
  if (!disk_rows.empty()) {
    listing.text += "\n" + render_table({"DISK", "SIZE", "ALLOCATED", "AGE", "CURRENT", "SANDBOXES"}, disk_rows);
  }
  return listing;
}

std::string vm_file_kind(Context& ctx, const std::string& id) {
  if (!image::check_image_id(id)) return "";
  std::error_code ec;
  if (std::filesystem::is_directory(vm::boot::artifact_root(ctx.paths, vm::boot::kKernelKind) / id, ec))
    return "kernel";
  if (std::filesystem::is_directory(vm::boot::artifact_root(ctx.paths, vm::boot::kDiskKind) / id, ec)) return "disk";
  return "";
}

Status remove_vm_file(Context& ctx, const std::string& kind, const std::string& id) {
  return vm::boot::remove_artifact(ctx.paths, kind == "kernel" ? vm::boot::kKernelKind : vm::boot::kDiskKind, id);
}

}  // namespace tnk::cli
