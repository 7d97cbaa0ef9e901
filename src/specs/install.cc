#include "specs/install.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <system_error>

#include "core/files.h"
#include "core/host_git.h"
#include "core/strings.h"
#include "specs/revision.h"
#include "specs/stage.h"

namespace tnk::specs {
namespace fs = std::filesystem;
namespace {

constexpr auto kCloneTimeout = std::chrono::seconds(120);
constexpr std::string_view kLocalRev = "local";
constexpr std::string_view kOldSpecsDir = ".specs-old";

// A staged specs tree and what it came from.
struct Staged {
  fs::path tree;
  std::string description;
  std::string recorded_rev;  // content of .specs-rev: "git:<7 hex>" or "local"
};

// A managed dir moved into place; `backup` holds the previous one until the install is complete.
struct Swap {
  fs::path target;
  fs::path backup;
  bool had_old = false;
};

bool exists_no_follow(const fs::path& p) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(p, ec));
}

// The last few non-empty lines of a child's stderr, for an error message.
std::string tail_lines(const std::string& text, size_t max_lines) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  if (lines.size() > max_lines) lines.erase(lines.begin(), lines.end() - static_cast<long>(max_lines));
  std::string out;
  for (const auto& l : lines) out += (out.empty() ? "" : "; ") + l;
  return out;
}

Status check_git_url(std::string_view url) {
  static constexpr std::string_view kSchemes[] = {"https://", "http://", "ssh://", "git://", "file://"};
  bool scheme = std::any_of(std::begin(kSchemes), std::end(kSchemes), [&](auto s) { return url.starts_with(s); });
  size_t at = url.find('@'), colon = url.find(':'), slash = url.find('/');
  bool scp_like = at != std::string_view::npos && colon != std::string_view::npos && at < colon &&
                  (slash == std::string_view::npos || colon < slash) && url.front() != '-';
  if (scheme || scp_like) return ok_status();
  return usage_error("specs source '" + std::string(url) + "' is neither a directory nor a git URL",
                     "pass a directory, or a URL such as https://example.com/you/tnk-specs.git");
}

Result<Staged> stage_git(const std::string& url, const fs::path& stage, Log& log) {
  TNK_RETURN_IF_ERROR(check_git_url(url));
  if (url.starts_with("http://") || url.starts_with("git://")) {
    log.warn("cloning specs over an unauthenticated transport (" + url.substr(0, url.find(':')) +
             "): anyone on the path can change them");
  }
  log.info("cloning specs from " + url);
  const fs::path tree = stage / "checkout";
  Result<ProcessResult> clone =
      run_host_git("/", {"clone", "--quiet", "--depth", "1", "--", url, tree.string()}, kCloneTimeout);
  if (!clone) return clone.error().context("cloning specs from " + url).with_hint("check the URL and your network");
  if (clone->exit_code != 0) {
    return failed("failed to clone specs from " + url + ": " + tail_lines(clone->err, 3),
                  "check the URL and your network; nothing was changed");
  }
  TNK_ASSIGN_OR_RETURN(std::string rev, git_revision(tree));
  return Staged{tree, "git " + url, rev};
}

Result<Staged> stage_directory(const fs::path& dir, const std::string& description, const fs::path& stage, Log& log) {
  log.info("installing specs from " + description);
  const fs::path tree = stage / "checkout";
  TNK_RETURN_IF_ERROR(copy_tree(dir, tree));
  return Staged{tree, description, std::string(kLocalRev)};
}

Result<Staged> stage_source(const InstallOptions& options, const fs::path& stage, Log& log) {
  std::error_code ec;
  if (options.source.empty()) {
    if (options.bundled_dir.empty() || !fs::is_directory(options.bundled_dir, ec)) {
      return not_found("the bundled specs were not found" +
                           (options.bundled_dir.empty() ? std::string() : " at " + options.bundled_dir.string()),
                       "reinstall tnk, or pass a specs directory or git URL with --git-url");
    }
    return stage_directory(options.bundled_dir, "bundled specs (" + options.bundled_dir.string() + ")", stage, log);
  }
  if (fs::is_directory(options.source, ec)) {
    fs::path dir = fs::absolute(options.source, ec).lexically_normal();
    return stage_directory(dir, "directory " + dir.string(), stage, log);
  }
  const std::string& s = options.source;
  if (s.starts_with('/') || s.starts_with("./") || s.starts_with("../")) {
    return not_found("specs source " + s + " is not a directory", "pass an existing directory or a git URL");
  }
  return stage_git(s, stage, log);
}

// Puts back what `done` replaced, newest first.
void roll_back(const std::vector<Swap>& done, const fs::path& stage) {
  for (auto it = done.rbegin(); it != done.rend(); ++it) {
    std::error_code ec;
    fs::rename(it->target, stage / ("failed-" + it->target.filename().string()), ec);
    if (it->had_old) fs::rename(it->backup, it->target, ec);
  }
}

Status swap_in(const fs::path& config_dir, const Staged& staged, const fs::path& stage,
               const std::vector<std::string>& dirs, std::vector<Swap>& done) {
  const fs::path old_root = stage / "old";
  std::error_code ec;
  fs::create_directory(old_root, ec);
  if (ec) return sys_error(ec.value(), "cannot create " + old_root.string());
  for (const std::string& d : dirs) {
    Swap swap{config_dir / d, old_root / d, exists_no_follow(config_dir / d)};
    if (swap.had_old) {
      fs::rename(swap.target, swap.backup, ec);
      if (ec) return sys_error(ec.value(), "cannot move " + swap.target.string() + " aside");
    }
    fs::rename(staged.tree / d, swap.target, ec);
    if (ec) {
      std::error_code ignored;
      if (swap.had_old) fs::rename(swap.backup, swap.target, ignored);
      return sys_error(ec.value(), "cannot install " + swap.target.string());
    }
    done.push_back(swap);
  }
  return ok_status();
}

// A replaced managed dir that differs from the new one (local edits, a profile the user added) is
// kept in <config_dir>/.specs-old/<dir> instead of being deleted with the stage.
void keep_changed(const fs::path& config_dir, const std::vector<Swap>& done, Log& log) {
  const fs::path keep_root = config_dir / kOldSpecsDir;
  for (const Swap& swap : done) {
    if (!swap.had_old || directory_hash(swap.backup) == directory_hash(swap.target)) continue;
    std::error_code ec;
    fs::create_directory(keep_root, ec);
    fs::permissions(keep_root, fs::perms::owner_all, ec);
    fs::remove_all(keep_root / swap.target.filename(), ec);
    fs::rename(swap.backup, keep_root / swap.target.filename(), ec);
    if (!ec) {
      log.warn(swap.target.string() + " differed from the new specs; the previous version is in " +
               (keep_root / swap.target.filename()).string());
    }
  }
}

// The stage lives next to config_dir, unless config_dir is a mount point of its own.
fs::path stage_parent(const fs::path& config_dir) {
  struct stat dir_st {
  }, parent_st{};
  if (::stat(config_dir.c_str(), &dir_st) == 0 && ::stat(config_dir.parent_path().c_str(), &parent_st) == 0 &&
      dir_st.st_dev != parent_st.st_dev) {
    return config_dir;
  }
  return config_dir.parent_path();
}

Status check_existing(const fs::path& config_dir, bool force) {
  for (std::string_view d : kManagedDirs) {
    const fs::path target = config_dir / d;
    std::error_code ec;
    if (force && fs::is_symlink(target, ec)) {
      return usage_error(target.string() + " is a symbolic link; `tnk init --force` does not replace it",
                         "remove the link or update what it points to yourself");
    }
    if (!force && exists_no_follow(target)) {
      return usage_error("specs already installed in " + config_dir.string(),
                         "use `tnk init --force` to refresh them (your tnk.toml is kept)");
    }
  }
  return ok_status();
}

}  // namespace

Result<InstallReport> install_specs(const fs::path& config_dir, const InstallOptions& options, Log& log) {
  TNK_RETURN_IF_ERROR(check_existing(config_dir, options.force));
  TNK_RETURN_IF_ERROR(make_dirs(config_dir.parent_path(), 0700));
  TNK_ASSIGN_OR_RETURN(StageDir stage, StageDir::create(stage_parent(config_dir), ".tnk-init-"));
  TNK_ASSIGN_OR_RETURN(Staged staged, stage_source(options, stage.path(), log));

  std::vector<std::string> dirs;
  for (std::string_view d : kManagedDirs) {
    std::error_code ec;
    if (fs::is_directory(fs::symlink_status(staged.tree / d, ec))) dirs.emplace_back(d);
  }
  if (dirs.empty()) {
    return failed(staged.description + " does not look like tnk specs: it has no sandbox.d, provider.d or clients",
                  "check the source; nothing was changed");
  }
  TNK_RETURN_IF_ERROR(make_dirs(config_dir, 0700));
  if (options.force) log.info("refreshing " + join(dirs) + " in " + config_dir.string() + " (tnk.toml is kept)");

  std::vector<Swap> done;
  Status st = swap_in(config_dir, staged, stage.path(), dirs, done);
  if (st) st = write_file_atomic(config_dir / kSpecsRevFile, staged.recorded_rev + "\n", 0600);
  if (!st) {
    roll_back(done, stage.path());
    return std::move(st).error().context("installing specs into " + config_dir.string());
  }
  keep_changed(config_dir, done, log);
  log.info("installed: " + join(dirs));
  return InstallReport{staged.description, dirs, specs_revision(config_dir, {})};
}

fs::path bundled_specs_dir(const fs::path& self_exe) {
  const fs::path exe_dir = self_exe.parent_path();
  std::vector<fs::path> candidates = {exe_dir / "share" / "tnk" / "specs",
                                      (exe_dir / ".." / "share" / "tnk" / "specs").lexically_normal()};
  for (const fs::path& dir : candidates) {
    std::error_code ec;
    if (fs::is_directory(dir, ec)) return dir;
  }
  return {};
}

}  // namespace tnk::specs
