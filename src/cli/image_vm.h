// The vm backend's part of `tnk image`: guest kernels and base disks in build (--vm), ls and rm.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "context/context.h"
#include "core/result.h"
#include "image/store.h"
#include "image/users.h"

namespace tnk::cli {

// The image tables' age cell (cmd_image.cc): "3d" (sizes: output's megabytes).
std::string age(int64_t since, int64_t now);

// `tnk image build --vm`: the kernel and the base disk of `image`, as the document's "kernel" and
// "disk" objects. The text lines (kernel id, disk id) are appended to `text`.
Result<nlohmann::json> build_vm_files(Context& ctx, const image::ImageInfo& image, bool force, std::string& text);
// `tnk image build --vm -n`: what would be built ("kernel" and "disk" objects with id, exists, path).
nlohmann::json plan_vm_files(Context& ctx, const std::string& image_id);

struct VmListing {
  nlohmann::json items = nlohmann::json::array();  // kernels then disks, each with "kind"
  std::vector<std::string> ids;
  std::string text;  // the KERNEL and DISK tables, "" when there is neither
};
Result<VmListing> list_vm_files(Context& ctx, const image::ImageUsers& users, const std::string& current_image);

// "kernel" or "disk" when `id` is one in the cache; "" otherwise.
std::string vm_file_kind(Context& ctx, const std::string& id);
// The sandboxes that use disk `id` (their record names it or its image).
std::vector<std::string> disk_users(Context& ctx, const image::ImageUsers& users, const std::string& id);
Status remove_vm_file(Context& ctx, const std::string& kind, const std::string& id);

}  // namespace tnk::cli
