// Base disks (mke2fs -d + debugfs, cached) and per-sandbox overlays (qemu-img).
#include "backend/vm/boot/disk.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>

#include "audit/sha256.h"
#include "backend/vm/boot/boot_files_store.h"
#include "core/file_memo.h"
#include "core/files.h"
#include "core/subprocess.h"
#include "core/unique_fd.h"
#include "idmap/userns.h"
#include "image/tree.h"

namespace tnk::vm::boot {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMiB = 1024 * 1024;
constexpr const char* kAgentScriptFile = "agent.debugfs";

DiskInfo disk_info_from(const ArtifactEntry& entry) {
  DiskInfo info;
  info.id = entry.id;
  info.dir = entry.dir;
  info.base = entry.dir / kBaseDiskFile;
  info.problem = entry.problem;
  if (!entry.problem.empty()) return info;
  const auto& doc = entry.doc;
  info.image_id = doc.value("image_id", std::string());
  info.agent_sha256 = doc.value("agent_sha256", std::string());
  info.size_bytes = doc.value("size_bytes", uint64_t{0});
  info.allocated_bytes = doc.value("allocated_bytes", uint64_t{0});
  info.built_at = doc.value("built_at", int64_t{0});
  info.build_seconds = doc.value("build_seconds", 0.0);
  return info;
}

// Runs a tool; its output in the error when it fails.
Result<std::string> run_tool(const std::vector<std::string>& argv, std::chrono::seconds timeout,
                             const std::string& what) {
  ProcessOptions options;
  options.capture_stdout = true;
  options.capture_stderr = true;
  options.timeout = timeout;
  auto run = run_process(argv, options);
  if (!run) {
    if (run.error().kind == ErrorKind::kNotFound) {
      return not_found(argv[0] + " is not installed (" + what + " needs it)",
                       "apt-get install e2fsprogs qemu-utils (or run scripts/install-deps.sh)");
    }
    return run.error().context(what);
  }
  if (run->exit_code != 0) {
    return failed(what + ": " + argv[0] + " exited with status " + std::to_string(run->exit_code) + ": " + run->err +
                  run->out);
  }
  return run->out + run->err;
}

// mke2fs -d copies the tree's owners as it sees them. Root sees the root-owned image as is; an ordinary
// user's image belongs to its range, so mke2fs runs as the root of a namespace with a rootless sandbox's
// map: the guest gets the same owners as a rootless ns sandbox shows (agent's files are the user's).
Status make_ext4(const fs::path& tree, const fs::path& image, const DiskBuildOptions& options) {
  const std::string what = "making the ext4 base disk from " + tree.string();
  std::vector<std::string> argv = mke2fs_argv(tree, image);
  argv[0] = options.mke2fs;
  Result<std::string> made = std::string();
  if (::geteuid() == 0) {
    made = run_tool(argv, options.timeout, what);
  } else {
    TNK_ASSIGN_OR_RETURN(idmap::RootlessIds ids, idmap::rootless_ids());
    made = idmap::run_in_new_userns(idmap::sandbox_maps(ids, idmap::kAgentId), what,
                                    [&] { return run_tool(argv, options.timeout, what); });
  }
  if (!made) return made.error();
  return ok_status();
}

// The directory /sbin resolves to inside the tree: "/usr/sbin" when it is Debian's merged-/usr link.
std::string agent_dir_in(const fs::path& tree) {
  std::error_code ec;
  auto target = fs::read_symlink(tree / "sbin", ec);
  if (ec) return "/sbin";
  std::string t = target.string();
  if (t.starts_with("/")) return t;
  return "/" + t;
}

// debugfs exits 0 even when a command failed: look at the result instead.
Status verify_agent(const fs::path& image, const std::string& path, uint64_t size, const DiskBuildOptions& options) {
  TNK_ASSIGN_OR_RETURN(std::string out, run_tool({options.debugfs, "-R", "stat " + path, image.string()},
                                                 options.timeout, "checking the agent in the base disk"));
  bool ok = out.find("Type: regular") != std::string::npos && out.find("Mode:  0755") != std::string::npos &&
            out.find("User:     0") != std::string::npos &&
            out.find("Size: " + std::to_string(size)) != std::string::npos;
  if (!ok) return failed("debugfs did not add the agent as " + path + " to " + image.string() + ":\n" + out);
  return ok_status();
}

Result<nlohmann::json> build_disk_file(const fs::path& work, const image::ImageInfo& image, const fs::path& agent,
                                       const DiskBuildOptions& options) {
  auto base = work / kBaseDiskFile;
  uint64_t size = base_disk_size(image.size_bytes, image.inodes);
  {
    UniqueFd fd(::open(base.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (!fd.valid() || ::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
      return sys_error(errno, "cannot create " + base.string());
    }
  }
  TNK_RETURN_IF_ERROR(make_ext4(image.rootfs, base, options));
  const std::string dir = agent_dir_in(image.rootfs);
  TNK_ASSIGN_OR_RETURN(std::string script, debugfs_agent_script(agent, dir));
  TNK_RETURN_IF_ERROR(write_file_atomic(work / kAgentScriptFile, script, 0600));
  TNK_RETURN_IF_ERROR(run_tool({options.debugfs, "-w", "-f", (work / kAgentScriptFile).string(), base.string()},
                               options.timeout, "adding tnk-agent to the base disk"));
  std::error_code ec;
  fs::remove(work / kAgentScriptFile, ec);
  TNK_RETURN_IF_ERROR(verify_agent(base, dir + "/tnk-agent", fs::file_size(agent, ec), options));
  if (::chmod(base.c_str(), 0444) != 0) return sys_error(errno, "cannot make " + base.string() + " read-only");
  struct stat st {};
  if (::stat(base.c_str(), &st) != 0) return sys_error(errno, "cannot stat " + base.string());
  return nlohmann::json{{"size_bytes", static_cast<uint64_t>(st.st_size)},
                        {"allocated_bytes", static_cast<uint64_t>(st.st_blocks) * 512}};
}

}  // namespace

std::string disk_id(const std::string& image_id, const std::string& agent_sha256) {
  return image_id + "-agent-" + agent_sha256.substr(0, 12);
}

uint64_t base_disk_size(uint64_t tree_bytes, uint64_t tree_inodes) {
  // Each file takes a 4 KiB block at least, and ext4 keeps a 256-byte inode per 16 KiB; journal 64 MiB.
  uint64_t data = tree_bytes + tree_inodes * 4096;
  uint64_t bytes = data + data / 4 + 256 * kMiB;
  return (bytes + kMiB - 1) / kMiB * kMiB;
}

std::vector<std::string> mke2fs_argv(const fs::path& tree, const fs::path& image) {
  return {"mke2fs", "-q", "-F",       "-t", "ext4",           "-T", "default",     "-b",          "4096", "-m",
          "1",      "-L", kDiskLabel, "-E", "root_owner=0:0", "-d", tree.string(), image.string()};
}

Result<std::string> debugfs_agent_script(const fs::path& agent, const std::string& agent_dir) {
  for (const std::string& s : {agent.string(), agent_dir}) {
    if (s.find_first_of("\"\n\\") != std::string::npos || s.empty()) {
      return usage_error("cannot pass '" + s + "' to debugfs", "use a path without quotes, backslashes or newlines");
    }
  }
  return "cd \"" + agent_dir + "\"\n" + "write \"" + agent.string() +
         "\" tnk-agent\n"
         "sif tnk-agent mode 0100755\n"
         "sif tnk-agent uid 0\n"
         "sif tnk-agent gid 0\n";
}

std::vector<std::string> overlay_argv(const fs::path& base, const fs::path& overlay, uint64_t size_bytes) {
  std::vector<std::string> argv = {"qemu-img", "create",      "-q", "-f",  "qcow2",
                                   "-b",       base.string(), "-F", "raw", overlay.string()};
  if (size_bytes > 0) argv.push_back(std::to_string(size_bytes));
  return argv;
}

Result<std::string> file_sha256(const fs::path& file) {
  TNK_ASSIGN_OR_RETURN(std::string content, read_file(file));
  return audit::sha256_hex(content);
}

Result<std::string> agent_sha256(const Paths& paths, const fs::path& agent) {
  return memoized(paths.memo_dir() / "agent-sha256.json", {agent}, [&] { return file_sha256(agent); });
}

Result<DiskInfo> find_disk(const Paths& paths, const std::string& id) {
  return find_artifact_as(paths, kDiskKind, id, kBaseDiskFile, disk_info_from);
}

Result<std::vector<DiskInfo>> list_disks(const Paths& paths) {
  return list_artifacts_as(paths, kDiskKind, disk_info_from);
}

Result<DiskInfo> ensure_disk(const Paths& paths, const image::ImageInfo& image, const fs::path& agent, Log& log,
                             const DiskBuildOptions& options) {
  std::error_code ec;
  if (!fs::is_regular_file(agent, ec)) {
    return not_found("the guest agent " + agent.string() + " is missing (the base disk needs it)",
                     "build it with `cmake --build build --target tnk-agent`; it is installed next to tnk");
  }
  TNK_ASSIGN_OR_RETURN(std::string sha, agent_sha256(paths, agent));
  const std::string id = disk_id(image.id, sha);
  if (auto found = find_disk(paths, id)) return found;
  TNK_ASSIGN_OR_RETURN(FileLock lock, lock_artifact(paths, kDiskKind, id, options.lock_timeout, log));
  if (auto found = find_disk(paths, id)) return found;
  // The image found a moment ago can be gone (`rm -rf` of the cache during this start): say so, not what
  // mke2fs makes of a tree that vanishes under it.
  auto image_gone = [&] {
    return failed("the image tree " + image.rootfs.string() + " is missing: it was removed while base disk " + id +
                      " was to be built from it",
                  "run the command again: it builds the image and the disk again");
  };
  if (!fs::is_directory(image.rootfs, ec)) return image_gone();
  log.info("building base disk " + id + " from image " + image.id);
  auto build = [&](const fs::path& work) -> Result<nlohmann::json> {
    auto built = build_disk_file(work, image, agent, options);
    if (!built && !fs::is_directory(image.rootfs, ec)) return image_gone();
    TNK_ASSIGN_OR_RETURN(nlohmann::json doc, std::move(built));
    doc["image_id"] = image.id;
    doc["agent_sha256"] = sha;
    return doc;
  };
  TNK_ASSIGN_OR_RETURN(double seconds, build_artifact(paths, kDiskKind, id, "base disk " + id, build));
  TNK_ASSIGN_OR_RETURN(DiskInfo disk, find_disk(paths, id));
  log.info("base disk " + id + " ready: " + std::to_string(disk.size_bytes / 1'000'000) + " MB (" +
           std::to_string(disk.allocated_bytes / 1'000'000) + " MB allocated) in " +
           std::to_string(std::lround(seconds * 1000)) + " ms");
  return disk;
}

namespace {

// A base disk is never written (0444), so a link is as good as a copy, and costs nothing.
Status pin_base(const fs::path& base, const fs::path& pinned) {
  std::error_code ec;
  fs::remove(pinned, ec);  // a leftover of a start that failed before its overlay was made
  if (::link(base.c_str(), pinned.c_str()) == 0) return ok_status();
  if (errno != EXDEV) return sys_error(errno, "linking " + base.string() + " to " + pinned.string());
  TNK_RETURN_IF_ERROR(run_tool({"cp", "--sparse=always", "--reflink=auto", base.string(), pinned.string()},
                               std::chrono::seconds(600), "copying the base disk to " + pinned.string()));
  if (::chmod(pinned.c_str(), 0444) != 0) return sys_error(errno, "cannot make " + pinned.string() + " read-only");
  return ok_status();
}

}  // namespace

Status create_overlay(const fs::path& base, const fs::path& pinned, const fs::path& overlay, uint64_t size_bytes) {
  std::error_code ec;
  if (fs::exists(overlay, ec)) return failed("not creating " + overlay.string() + ": it exists");
  if (!fs::is_regular_file(base, ec)) {
    return not_found("the base disk " + base.string() + " is missing", "`tnk image build --vm` builds it");
  }
  uint64_t base_size = fs::file_size(base, ec);
  TNK_RETURN_IF_ERROR(pin_base(base, pinned));
  TNK_RETURN_IF_ERROR(run_tool(overlay_argv(fs::absolute(pinned), overlay, std::max(size_bytes, base_size)),
                               std::chrono::seconds(60), "creating the overlay " + overlay.string()));
  if (::chmod(overlay.c_str(), 0600) != 0) return sys_error(errno, "cannot restrict " + overlay.string());
  return ok_status();
}

}  // namespace tnk::vm::boot
