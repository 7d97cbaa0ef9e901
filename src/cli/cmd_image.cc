// tnk image build | ls | rm: the shared Debian root trees that sandboxes start from, and (image_vm.cc)
// the vm backend's guest kernels and base disks.
#include <algorithm>
#include <ctime>
#include <map>

#include "cli/command.h"
#include "cli/image_vm.h"
#include "cli/prompt.h"
#include "core/strings.h"
#include "image/apt_sources.h"
#include "image/layout.h"
#include "image/recipe.h"
#include "image/store.h"
#include "image/users.h"
#include "output/output.h"

namespace tnk::cli {

namespace {

struct BuildFlags {
  bool force = false;
  bool dry_run = false;
  bool vm = false;
};

struct RmFlags {
  std::vector<std::string> ids;
  bool yes = false;
  bool force = false;
};

// The recipe of the image this host's sandboxes use now (from the host's apt sources).
Result<image::Recipe> current_recipe() {
  TNK_ASSIGN_OR_RETURN(std::vector<image::AptSource> sources, image::read_apt_sources());
  return image::default_recipe(sources);
}

}  // namespace

std::string age(int64_t since, int64_t now) {
  int64_t s = now > since ? now - since : 0;
  if (s < 120) return std::to_string(s) + "s";
  if (s < 7200) return std::to_string(s / 60) + "m";
  if (s < 2 * 86400) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

namespace {

nlohmann::json to_json(const image::ImageInfo& info, bool current, const std::vector<std::string>& used_by) {
  bool ok = info.problem.empty();
  auto or_null = [ok](auto value) { return ok ? nlohmann::json(value) : nlohmann::json(nullptr); };
  return {{"kind", "image"},
          {"id", info.id},
          {"current", current},
          {"path", info.dir.string()},
          {"rootfs", info.rootfs.string()},
          {"size_bytes", or_null(info.size_bytes)},
          {"inodes", or_null(info.inodes)},
          {"built_at", or_null(info.built_at)},
          {"build_seconds", or_null(info.build_seconds)},
          {"recipe_hash", or_null(info.recipe_hash)},
          {"mmdebstrap_version", or_null(info.mmdebstrap_version)},
          {"used_by", used_by},
          {"problem", ok ? nlohmann::json(nullptr) : nlohmann::json(info.problem)}};
}

// What `image build` would do, without root and without building: the id and the mmdebstrap command.
Result<int> run_build_dry(Context& ctx, const image::Recipe& recipe, bool vm) {
  const std::string id = image::image_id(recipe);
  auto dir = ctx.paths.images_dir() / id;
  bool exists = image::find_image(ctx.paths, id).ok();
  auto work = ctx.paths.images_dir() / (image::kBuildPrefix + id + "-<pid>");
  auto argv = image::build_command(recipe, work);
  std::string command;
  for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;
  ctx.log.info(exists ? "dry run: image " + id + " is built; nothing to do"
                      : "dry run: would build image " + id + " with: " + command);
  nlohmann::json doc = {{"id", id},
                        {"exists", exists},
                        {"path", dir.string()},
                        {"rootfs", (dir / image::kRootfsDir).string()},
                        {"recipe_hash", image::recipe_hash(recipe)},
                        {"recipe", image::recipe_to_json(recipe)},
                        {"argv", argv}};
  if (vm) doc.update(plan_vm_files(ctx, id));
  ctx.out.document(doc, [&](std::ostream& os) { os << id << '\n'; });
  return kExitOk;
}

Result<int> run_build(Context& ctx, const BuildFlags& flags) {
  const bool force = flags.force;
  TNK_ASSIGN_OR_RETURN(image::Recipe recipe, current_recipe());
  if (flags.dry_run) return run_build_dry(ctx, recipe, flags.vm);
  const std::string id = image::image_id(recipe);
  TNK_ASSIGN_OR_RETURN(image::ImageUsers users, image::image_users(ctx.paths));
  auto used_by = users.users_of(id);
  bool existed = image::find_image(ctx.paths, id).ok();
  if (force && existed && !used_by.empty()) {
    return failed("not rebuilding image " + id + ": it is used by " + join(used_by),
                  "rebuilding a base under a sandbox corrupts the sandbox; delete those sandboxes first "
                  "(`tnk sandbox delete` in their projects)");
  }
  image::BuildOptions options;
  options.force = force;
  TNK_ASSIGN_OR_RETURN(image::ImageInfo info, image::ensure_image(ctx.paths, recipe, ctx.log, options));
  bool built = force || !existed;
  if (!built) {
    ctx.log.info("image " + id + " is already built (" + age(info.built_at, ::time(nullptr)) +
                 " ago); `tnk image build --force` rebuilds it");
  }
  auto doc = to_json(info, true, used_by);
  doc.erase("kind");
  doc["built"] = built;
  std::string text = id + "\n";
  if (flags.vm) {
    TNK_ASSIGN_OR_RETURN(nlohmann::json files, build_vm_files(ctx, info, force, text));
    doc.update(files);
  }
  ctx.out.document(doc, [&](std::ostream& os) { os << text; });
  return kExitOk;
}

Result<int> run_image_ls(Context& ctx, bool names_only) {
  TNK_ASSIGN_OR_RETURN(std::vector<image::ImageInfo> images, image::list_images(ctx.paths));
  TNK_ASSIGN_OR_RETURN(image::ImageUsers users, image::image_users(ctx.paths));
  std::string current;
  if (auto recipe = current_recipe()) {
    current = image::image_id(*recipe);
  } else {
    ctx.log.verbose("cannot tell the current image: " + recipe.error().message);
  }
  TNK_ASSIGN_OR_RETURN(VmListing vm_files, list_vm_files(ctx, users, current));
  if (names_only) {
    std::string names;
    for (const auto& info : images) names += info.id + "\n";
    for (const auto& id : vm_files.ids) names += id + "\n";
    ctx.out.raw(names);
    return kExitOk;
  }
  nlohmann::json items = nlohmann::json::array();
  std::vector<std::vector<std::string>> rows;
  int64_t now = ::time(nullptr);
  for (const auto& info : images) {
    auto used_by = users.users_of(info.id);
    items.push_back(to_json(info, info.id == current, used_by));
    if (!info.problem.empty()) {
      ctx.log.warn(info.problem);
      rows.push_back({info.id, "-", "-", "-", "-", info.id == current ? "yes" : "", std::to_string(used_by.size())});
      continue;
    }
    rows.push_back({info.id, megabytes(info.size_bytes), std::to_string(info.inodes), age(info.built_at, now),
                    std::to_string(static_cast<long>(info.build_seconds + 0.5)) + "s", info.id == current ? "yes" : "",
                    std::to_string(used_by.size())});
  }
  for (const auto& item : vm_files.items) items.push_back(item);
  ctx.out.list(items, [&](std::ostream& os) {
    if (images.empty()) {
      os << "no images yet: `tnk image build` builds one (the first sandbox start does it too)\n";
    } else {
      os << render_table({"ID", "SIZE", "INODES", "AGE", "BUILT-IN", "CURRENT", "SANDBOXES"}, rows);
    }
    os << vm_files.text;
  });
  return kExitOk;
}

Result<int> run_rm(Context& ctx, const RmFlags& flags) {
  TNK_ASSIGN_OR_RETURN(std::vector<image::ImageInfo> images, image::list_images(ctx.paths));
  TNK_ASSIGN_OR_RETURN(image::ImageUsers users, image::image_users(ctx.paths));
  std::string listed;
  std::map<std::string, std::string> kind;  // id -> "image", "kernel" or "disk"
  std::map<std::string, std::vector<std::string>> users_of;
  for (const auto& id : flags.ids) {  // every id is checked before anything is removed
    TNK_RETURN_IF_ERROR(image::check_image_id(id));
    bool present = std::any_of(images.begin(), images.end(), [&](const image::ImageInfo& i) { return i.id == id; });
    kind[id] = present ? "image" : vm_file_kind(ctx, id);
    if (kind[id].empty()) return not_found("no image, kernel or disk " + id, "`tnk image ls` lists them");
    users_of[id] = kind[id] == "disk" ? disk_users(ctx, users, id) : users.users_of(id);
    if (kind[id] == "kernel") users_of[id].clear();  // QEMU reads it at boot; the next start rebuilds it
    if (!users_of[id].empty() && !flags.force) return image::in_use_error(id, users_of[id]);
    listed += (listed.empty() ? "" : ", ") + id;
  }
  if (!flags.yes) {
    if (!ctx.terminal.stdin_tty || !ctx.terminal.stderr_tty) {
      return permission_denied("refusing to remove image " + listed + " without confirmation",
                               "run it on a terminal, or pass --yes");
    }
    if (!confirmed("remove image " + listed + "?")) return failed("not removed");
  }
  nlohmann::json removed = nlohmann::json::array();
  for (const auto& id : flags.ids) {
    const auto& used_by = users_of[id];
    if (kind[id] == "image") {
      TNK_RETURN_IF_ERROR(image::remove_image(ctx.paths, id, used_by, flags.force));
    } else {
      TNK_RETURN_IF_ERROR(remove_vm_file(ctx, kind[id], id));
    }
    for (const auto& s : used_by) {
      ctx.log.warn("sandbox " + s + " used " + kind[id] + " " + id + "; delete and recreate it");
    }
    ctx.log.info("removed " + kind[id] + " " + id);
    removed.push_back(id);
  }
  ctx.out.document({{"removed", removed}}, [](std::ostream&) {});
  return kExitOk;
}

}  // namespace

void add_image_commands(CLI::App& root, CommandTable& table) {
  auto* image = root.add_subcommand("image", "Build, list and remove the base images sandboxes start from");
  describe(*image,
           "Manage the Debian bookworm root trees that every sandbox starts from. They are built with mmdebstrap "
           "from the Debian mirror this host's apt uses, cached under $XDG_CACHE_HOME/tnk/images, and named by the "
           "hash of their recipe. The vm backend adds a guest kernel ($XDG_CACHE_HOME/tnk/kernels) and an ext4 base "
           "disk per image ($XDG_CACHE_HOME/tnk/disks). See docs/images.md.",
           "tnk image ls");

  auto* build = image->add_subcommand("build", "Build the current base image if it is not built yet");
  describe(*build,
           "Build the base image of the current recipe (the first sandbox start does this too) and print its id. "
           "Takes about a minute and needs root for now. --force builds it again (newer packages from the mirror) "
           "and swaps it in; it refuses while a sandbox uses the image. --vm also builds what the vm backend boots: "
           "the guest kernel (compiled once per machine from linux-source-6.1, a few minutes) and the image's ext4 "
           "base disk with tnk-agent (a second).",
           "tnk image build --vm");
  auto build_flags = std::make_shared<BuildFlags>();
  build->add_flag("--force", build_flags->force, "Rebuild even when the image (and, with --vm, the kernel) exists");
  build->add_flag("-n,--dry-run", build_flags->dry_run, "Show the image id and the mmdebstrap command, build nothing");
  build->add_flag("--vm", build_flags->vm, "Also build the guest kernel and the base disk of the vm backend");
  table.add(build, [build_flags](Context& ctx) { return run_build(ctx, *build_flags); });

  auto* ls = image->add_subcommand("ls", "List the cached base images, guest kernels and base disks");
  describe(*ls,
           "List the cached images: size, inode count, age, build time, whether it is the current recipe's, and "
           "how many sandboxes use it; then the vm backend's guest kernels and base disks, if any.",
           "tnk image ls -o json");
  auto names_only = std::make_shared<bool>(false);
  ls->add_flag("-q,--quiet", *names_only, "Print only image ids");
  table.add(ls, [names_only](Context& ctx) { return run_image_ls(ctx, *names_only); });

  auto* rm = image->add_subcommand("rm", "Remove cached base images, guest kernels or base disks");
  describe(*rm,
           "Remove images, guest kernels or base disks from the cache. Refuses an image or disk that a sandbox was "
           "created from unless --force (that sandbox then cannot start until it is deleted and recreated). Asks on "
           "a terminal; pass --yes otherwise.",
           "tnk image rm debian-bookworm-0123456789ab --yes");
  auto rm_flags = std::make_shared<RmFlags>();
  rm->add_option("ID", rm_flags->ids, "Image, kernel or disk ids, as `tnk image ls` shows them")->required();
  rm->add_flag("-y,--yes", rm_flags->yes, "Do not ask for confirmation");
  rm->add_flag("--force", rm_flags->force, "Remove even when sandboxes use it");
  table.add(rm, [rm_flags](Context& ctx) { return run_rm(ctx, *rm_flags); });
}

}  // namespace tnk::cli
