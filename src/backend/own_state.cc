#include "backend/own_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>

#include "audit/sha256.h"
#include "core/files.h"
#include "core/phase_timer.h"
#include "core/subprocess.h"
#include "idmap/userns.h"
#include "image/tree.h"
#include "session/control_client.h"
#include "state/layout.h"
#include "state/liveness.h"
#include "state/own_disk.h"
#include "state/store.h"

namespace tnk::backend {
namespace {

namespace fs = std::filesystem;

struct OwnEntry {
  const char* path;  // in the state directory (state/layout.h)
  bool linked;       // hard-linked rather than copied: the base disk, which nothing writes
};

constexpr std::array<OwnEntry, 8> kOwnState = {{{state::kUpperDir, false},
                                                {state::kOwnDiskUpperDir, false},
                                                {state::kOwnDiskReviewUpperDir, false},
                                                {state::kDiskFile, false},
                                                {state::kBaseDiskLink, true},
                                                {state::kBootsFromBase, false},
                                                {state::kReviewUpperDir, false},
                                                {state::kReviewBaselineFile, false}}};
constexpr uint64_t kLargestHashed = 16u << 20;

bool present(const fs::path& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

nlohmann::json describe(const fs::path& dir, const OwnEntry& entry) {
  const fs::path path = dir / entry.path;
  struct stat st {};
  nlohmann::json sha = nullptr;
  uint64_t bytes = 0;
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    bytes = static_cast<uint64_t>(st.st_size);
    if (bytes <= kLargestHashed) {
      if (auto text = read_file(path); text.ok()) sha = audit::sha256_hex(*text);
    }
  } else if (auto size = image::measure_owned_tree(path); size.ok()) {
    bytes = size->bytes;
  }
  return {{"path", entry.path}, {"bytes", bytes}, {"sha256", sha}, {"shared", entry.linked}};
}

// cp -a keeps owners, modes, times, links, device nodes (overlayfs's whiteouts) and extended attributes
// (its opaque directories); -x never crosses into a mount.
Status copy_entry(const fs::path& source, const fs::path& target, bool linked) {
  if (linked && ::link(source.c_str(), target.c_str()) == 0) return ok_status();
  ProcessOptions options;
  options.capture_stderr = true;
  TNK_ASSIGN_OR_RETURN(auto copied, run_process({"cp", "-a", "-x", "--reflink=auto", "--no-target-directory",
                                                 source.string(), target.string()},
                                                options));
  if (copied.exit_code != 0) return failed("cp could not copy " + source.string() + ": " + copied.err);
  return ok_status();
}

Status copy_entries(const fs::path& from, const fs::path& to) {
  for (const OwnEntry& entry : kOwnState) {
    if (present(from / entry.path)) TNK_RETURN_IF_ERROR(copy_entry(from / entry.path, to / entry.path, entry.linked));
  }
  return ok_status();
}

// Rootless, the upper layer holds files of the user's range, which only the range's owner may read
// and give their owners back. The directories that hold the entries are made first, as the user: the
// range's root would own them.
Status as_owner(const std::string& what, const fs::path& from, const fs::path& to,
                const std::function<Status()>& work) {
  for (const OwnEntry& entry : kOwnState) {
    if (present(from / entry.path)) TNK_RETURN_IF_ERROR(make_dirs((to / entry.path).parent_path(), 0700));
  }
  if (::geteuid() == 0) return work();
  auto done = idmap::run_as_range_owner(what, [&work]() -> Result<std::string> {
    TNK_RETURN_IF_ERROR(work());
    return std::string();
  });
  if (!done) return done.error();
  return ok_status();
}

Status move_entries(const fs::path& from, const fs::path& to) {
  for (const OwnEntry& entry : kOwnState) {
    const fs::path source = from / entry.path;
    const fs::path target = to / entry.path;
    if (!present(source)) continue;
    if (::rename(source.c_str(), target.c_str()) == 0) continue;
    // Staged on a sandbox's own disk (checkpoint.cc's put_back), what lives beside it is copied across.
    if (errno != EXDEV) return sys_error(errno, "cannot move " + source.string() + " to " + target.string());
    TNK_RETURN_IF_ERROR(copy_entry(source, target, entry.linked));
  }
  return ok_status();
}

}  // namespace

Result<nlohmann::json> copy_own_state(const fs::path& from, const fs::path& to) {
  TNK_RETURN_IF_ERROR(make_dirs(to, 0700));
  TNK_RETURN_IF_ERROR(
      as_owner("copy the sandbox's state into " + to.string(), from, to, [&] { return copy_entries(from, to); }));
  mark_phase("copy");
  nlohmann::json entries = nlohmann::json::array();
  for (const OwnEntry& entry : kOwnState) {
    if (present(to / entry.path)) entries.push_back(describe(to, entry));
  }
  mark_phase("measure the copy");
  return entries;
}

Status remove_own_state(const fs::path& dir) {
  for (const OwnEntry& entry : kOwnState) {
    const fs::path path = dir / entry.path;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) continue;
    if (!S_ISDIR(st.st_mode)) {
      if (::unlink(path.c_str()) != 0) return sys_error(errno, "cannot remove " + path.string());
      continue;
    }
    TNK_RETURN_IF_ERROR(image::remove_owned_tree(path));
  }
  return ok_status();
}

// A directory moved to another parent needs write access to itself (its ".."): the range's owner's.
Status move_own_state(const fs::path& from, const fs::path& to) {
  return as_owner("move the sandbox's state into " + to.string(), from, to, [&] { return move_entries(from, to); });
}

bool runs(Context& ctx, const std::string& id) {
  state::Store store(ctx.paths.sandboxes_dir());
  return state::observe(store, id) == state::SandboxState::kRunning;
}

Result<std::optional<UniqueFd>> hold_still(Context& ctx, const std::string& id) {
  if (!runs(ctx, id)) return std::optional<UniqueFd>();
  state::Store store(ctx.paths.sandboxes_dir());
  TNK_ASSIGN_OR_RETURN(UniqueFd held,
                       session::request_pause(store.file(id, state::kControlSocket), std::chrono::seconds(15)));
  return std::optional<UniqueFd>(std::move(held));
}

Status repoint_overlay(const fs::path& dir) {
  if (!present(dir / state::kDiskFile)) return ok_status();
  ProcessOptions options;
  options.capture_stderr = true;
  TNK_ASSIGN_OR_RETURN(
      auto rebased, run_process({"qemu-img", "rebase", "-u", "-F", "raw", "-b", (dir / state::kBaseDiskLink).string(),
                                 "-f", "qcow2", (dir / state::kDiskFile).string()},
                                options));
  if (rebased.exit_code != 0) {
    return failed("qemu-img could not point the copied disk at " + (dir / state::kBaseDiskLink).string() + ": " +
                  rebased.err);
  }
  return ok_status();
}

}  // namespace tnk::backend
