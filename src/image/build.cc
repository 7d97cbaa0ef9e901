// ensure_image: build an image once, under its lock, in a work directory that is renamed into place.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <deque>

#include "core/file_lock.h"
#include "core/files.h"
#include "core/stopwatch.h"
#include "core/subprocess.h"
#include "core/unique_fd.h"
#include "idmap/userns.h"
#include "image/build_process.h"
#include "image/layout.h"
#include "image/store.h"
#include "image/tree.h"

namespace tnk::image {
namespace {

constexpr uint64_t kMinFreeBytes = 1024ull * 1024 * 1024;  // the tree is ~250 MB; apt needs room for .debs
constexpr size_t kTailLines = 12;

std::string mb(uint64_t bytes) { return std::to_string((bytes + 500'000) / 1'000'000) + " MB"; }

std::string seconds_text(double s) { return std::to_string(static_cast<long>(std::lround(s))) + " s"; }

// "mmdebstrap 1.3.5" -> "1.3.5". not_found (with the install hint) when the program is missing.
Result<std::string> mmdebstrap_version(const std::string& program) {
  ProcessOptions options;
  options.capture_stdout = true;
  options.capture_stderr = true;
  options.timeout = std::chrono::seconds(30);
  auto result = run_process({program, "--version"}, options);
  if (!result) {
    Error e = result.error();
    if (e.kind == ErrorKind::kNotFound) {
      return not_found("mmdebstrap is not installed (tnk builds its Debian image with it)",
                       "apt-get install mmdebstrap (or run scripts/install-deps.sh)");
    }
    return e;
  }
  if (result->exit_code != 0)
    return failed(program + " --version exited with status " + std::to_string(result->exit_code));
  std::string out = result->out;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  size_t space = out.rfind(' ');
  return space == std::string::npos ? out : out.substr(space + 1);
}

Status check_free_space(const std::filesystem::path& dir) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return sys_error(errno, "cannot check free space in " + dir.string());
  uint64_t free_bytes = uint64_t{fs.f_bavail} * fs.f_frsize;
  if (free_bytes < kMinFreeBytes) {
    return failed(
        "only " + mb(free_bytes) + " free in " + dir.string() + "; building an image needs about " + mb(kMinFreeBytes),
        "free some space, or point XDG_CACHE_HOME at a larger file system");
  }
  return ok_status();
}

std::string mirror_list(const Recipe& recipe) {
  std::string out;
  for (const auto& m : recipe.mirrors) out += (out.empty() ? "" : ", ") + m.uri;
  return out;
}

struct BuildRun {
  std::deque<std::string> tail;  // the last lines, for the error message
  int exit_code = 0;
};

// Runs mmdebstrap into `work`/rootfs: progress on `log`, every line into the build log.
Result<BuildRun> run_mmdebstrap(const Recipe& recipe, const std::filesystem::path& work,
                                const std::filesystem::path& log_file, const FileLock& lock, Log& log,
                                const BuildOptions& options) {
  UniqueFd out(::open(log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!out.valid()) return sys_error(errno, "cannot write " + log_file.string());
  auto argv = build_command(recipe, work);
  argv[0] = options.mmdebstrap;
  std::string header = "#";
  for (const auto& a : argv) header += " " + a;
  (void)write_all(out.get(), header + "\n", log_file.string());

  BuildRun run;
  ProgressFilter progress;
  const Stopwatch clock;
  bool log_ok = true;
  auto on_line = [&](std::string_view line) {
    if (log_ok) log_ok = write_all(out.get(), std::string(line) + "\n", log_file.string()).ok();
    if (auto phase = progress.feed(line)) {
      log.info("  " + progress_line(progress.phase(), ProgressFilter::kPhases, *phase, clock));
    }
    log.verbose(std::string(line));
    if (line.empty()) return;
    run.tail.emplace_back(line);
    if (run.tail.size() > kTailLines) run.tail.pop_front();
  };
  StreamOptions stream{options.timeout, lock.fd(), true};
  TNK_ASSIGN_OR_RETURN(run.exit_code, run_streaming(argv, stream, on_line));
  return run;
}

// An ordinary user's build: mmdebstrap's tarball is unpacked as the mapped root of the user's range (so
// the tree's files belong to the range), and `agent`'s files are given to the user.
Status unpack_rootless(const std::filesystem::path& work, const std::filesystem::path& log_file) {
  const auto tarball = work / kRootfsTarball;
  const auto rootfs = work / kRootfsDir;
  TNK_RETURN_IF_ERROR(make_dirs(rootfs, 0755));
  // Device nodes cannot be made in a user namespace; every sandbox mounts its own /dev anyway.
  const std::vector<std::string> argv = {
      "tar", "--numeric-owner", "--preserve-permissions", "--xattrs", "--exclude=./dev/*", "-xf", tarball.string(),
      "-C",  rootfs.string()};
  auto unpacked = idmap::run_as_range_owner("unpack " + tarball.string(), [&argv, &log_file]() -> Result<std::string> {
    ProcessOptions options;
    options.capture_stderr = true;
    options.timeout = std::chrono::minutes(10);
    auto result = run_process(argv, options);
    if (result && result->exit_code == 0) return std::string();
    std::string why = result ? result->err : result.error().message + "\n";
    UniqueFd log(::open(log_file.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW));
    if (log.valid()) (void)write_all(log.get(), "unpacking as the range's root:\n" + why, log_file.string());
    return failed("tar could not unpack " + argv[5]);
  });
  if (!unpacked) {
    return unpacked.error().with_hint("tar could not unpack the image as the range's root; see " + log_file.string());
  }
  if (::unlink(tarball.c_str()) != 0) return sys_error(errno, "cannot remove " + tarball.string());
  return give_agent_files_to_user(rootfs);
}

// mmdebstrap does not fsync; without this a power cut after the rename could leave an image whose
// files are empty, and nothing would ever rebuild it.
Status sync_tree(const std::filesystem::path& work) {
  UniqueFd fd(::open(work.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid() || ::syncfs(fd.get()) != 0) return sys_error(errno, "cannot sync " + work.string());
  return ok_status();
}

// Moves the finished work directory to `dir`; an existing image there (--force, or an unusable one)
// is swapped out atomically and then removed.
Status install(const std::filesystem::path& work, const std::filesystem::path& dir, Log& log) {
  TNK_RETURN_IF_ERROR(sync_tree(work));
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    if (::rename(work.c_str(), dir.c_str()) != 0) {
      return sys_error(errno, "cannot move the new image to " + dir.string());
    }
    return ok_status();
  }
  if (::renameat2(AT_FDCWD, work.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) != 0) {
    if (errno != EINVAL && errno != ENOSYS) return sys_error(errno, "cannot swap the new image into " + dir.string());
    // No RENAME_EXCHANGE on this file system: move the old one aside first (a moment without an image).
    auto old = dir.parent_path() / (kRemovePrefix + dir.filename().string() + "-" + std::to_string(::getpid()));
    if (::rename(dir.c_str(), old.c_str()) != 0) return sys_error(errno, "cannot move " + dir.string() + " aside");
    if (::rename(work.c_str(), dir.c_str()) != 0) {
      return sys_error(errno, "cannot move the new image to " + dir.string());
    }
    if (::rename(old.c_str(), work.c_str()) != 0) return sys_error(errno, "cannot move " + old.string());
  }
  if (auto removed = remove_owned_tree(work); !removed) {
    log.warn("the replaced image stays in " + work.string() + ": " + removed.error().message);
  }
  return ok_status();
}

// An `rm -rf` of the cache during a build unlinks the lock file the build holds, and what mmdebstrap
// wrote may be half gone: that is never made an image, and the error says what happened instead of
// mmdebstrap's complaints about files that vanished (or a build log that is gone too).
Status check_cache_kept(const std::filesystem::path& images, const std::string& id, const FileLock& lock,
                        const std::filesystem::path& work) {
  struct stat held {
  }, now{};
  std::error_code ec;
  bool kept = ::fstat(lock.fd(), &held) == 0 && held.st_nlink > 0 &&
              ::stat((images / (id + kLockSuffix)).c_str(), &now) == 0 && now.st_ino == held.st_ino &&
              now.st_dev == held.st_dev && std::filesystem::is_directory(work, ec);
  if (kept) return ok_status();
  return failed("the image cache " + images.string() + " was removed while image " + id + " was being built",
                "run the command again: it builds the image again");
}

Result<ImageInfo> build_locked(const Paths& paths, const Recipe& recipe, const FileLock& lock, Log& log,
                               const BuildOptions& options, const std::string& version) {
  const std::string id = image_id(recipe);
  auto images = paths.images_dir();
  auto work = images / (std::string(kBuildPrefix) + id + "-" + std::to_string(::getpid()));
  auto log_file = images / (id + kBuildLogSuffix);
  TNK_RETURN_IF_ERROR(check_free_space(images));
  TNK_RETURN_IF_ERROR(remove_owned_tree(work));
  TNK_RETURN_IF_ERROR(make_dirs(work, 0755));

  log.info((options.force ? "rebuilding image " : "building image ") + id + " from " + mirror_list(recipe) +
           (options.force ? " (about a minute)" : " (first use; about a minute)"));
  auto started = std::chrono::steady_clock::now();
  auto run = run_mmdebstrap(recipe, work, log_file, lock, log, options);
  if (Status kept = check_cache_kept(images, id, lock, work); !kept.ok()) {
    (void)remove_owned_tree(work);
    return kept.error();
  }
  if (!run || run->exit_code != 0) {
    (void)remove_owned_tree(work);
    if (!run) return run.error().context("building image " + id);
    std::string tail;
    for (const auto& line : run->tail) tail += "\n  " + line;
    return failed("building image " + id + ": mmdebstrap exited with status " + std::to_string(run->exit_code) +
                      "; its last lines:" + tail,
                  "the full output is in " + log_file.string());
  }
  if (::geteuid() != 0) {
    if (Status unpacked = unpack_rootless(work, log_file); !unpacked.ok()) {
      Status kept = check_cache_kept(images, id, lock, work);
      (void)remove_owned_tree(work);
      if (!kept.ok()) return kept.error();
      return unpacked.error().context("building image " + id);
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  ImageInfo info;
  info.id = id;
  info.dir = images / id;
  info.rootfs = info.dir / kRootfsDir;
  auto size = measure_owned_tree(work / kRootfsDir);
  if (!size) {
    Status kept = check_cache_kept(images, id, lock, work);
    (void)remove_owned_tree(work);
    return kept.ok() ? size.error() : kept.error();
  }
  info.size_bytes = size->bytes;
  info.inodes = size->inodes;
  info.built_at = static_cast<int64_t>(::time(nullptr));
  info.build_seconds = std::round(seconds * 10) / 10;
  info.recipe = recipe_to_json(recipe);
  info.recipe_hash = recipe_hash(recipe);
  info.mmdebstrap_version = version;
  TNK_RETURN_IF_ERROR(write_file_atomic(work / kImageJsonFile, image_info_to_json(info).dump(2) + "\n", 0644));
  if (Status kept = check_cache_kept(images, id, lock, work); !kept.ok()) {
    (void)remove_owned_tree(work);
    return kept.error();
  }
  TNK_RETURN_IF_ERROR(install(work, info.dir, log));
  log.info("image " + id + " ready: " + mb(info.size_bytes) + " in " + seconds_text(seconds));
  return info;
}

}  // namespace

std::vector<std::string> build_command(const Recipe& recipe, const std::filesystem::path& work) {
  if (::geteuid() == 0) return mmdebstrap_argv(recipe, work / kRootfsDir, "root");
  return mmdebstrap_argv(recipe, work / kRootfsTarball, "unshare");
}

Result<ImageInfo> ensure_image(const Paths& paths, const Recipe& recipe, Log& log) {
  return ensure_image(paths, recipe, log, BuildOptions{});
}

Result<ImageInfo> ensure_image(const Paths& paths, const Recipe& recipe, Log& log, const BuildOptions& options) {
  TNK_RETURN_IF_ERROR(check_recipe(recipe));
  const std::string id = image_id(recipe);
  if (!options.force) {
    if (auto found = find_image(paths, id)) return found;
  }
  if (::geteuid() != 0) {
    // mmdebstrap's unshare mode maps the image's ids onto the user's range with newuidmap.
    if (auto ids = idmap::rootless_ids(); !ids) return ids.error().context("building image " + id);
    if (auto helper = idmap::find_map_helper("newuidmap"); !helper) return helper.error();
  }
  TNK_ASSIGN_OR_RETURN(std::string version, mmdebstrap_version(options.mmdebstrap));
  TNK_RETURN_IF_ERROR(make_dirs(paths.images_dir(), 0700));
  TNK_ASSIGN_OR_RETURN(
      FileLock lock,
      FileLock::acquire(
          paths.images_dir() / (id + kLockSuffix), options.lock_timeout,
          [&] { log.info("waiting for another tnk process that is building image " + id); }, kBuildLockBusyHint));
  if (!options.force) {
    if (auto found = find_image(paths, id)) return found;  // the other process built it meanwhile
  }
  remove_stale_work_dirs(paths, log, id);
  return build_locked(paths, recipe, lock, log, options, version);
}

}  // namespace tnk::image
