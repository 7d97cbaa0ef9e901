#include "state/store.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <string_view>
#include <system_error>

#include <unistd.h>

#include "core/files.h"
#include "core/trusted_file.h"
#include "idmap/userns.h"
#include "state/layout.h"
#include "state/own_disk.h"

namespace tnk::state {
namespace fs = std::filesystem;

Result<std::optional<SandboxRecord>> Store::load(const std::string& id) const {
  fs::path path = file(id, kRecordFile);
  // tnk writes the record itself (0600): a link, another user's file or a writable one is refused.
  auto text = read_trusted_file(path, "sandbox record", LinkPolicy::kRefuse);
  if (!text) {
    if (text.error().sys_errno == ENOENT) return std::optional<SandboxRecord>();
    return text.error();
  }
  TNK_ASSIGN_OR_RETURN(SandboxRecord record, record_from_json_text(*text, path));
  return std::optional<SandboxRecord>(std::move(record));
}

Status Store::save(const SandboxRecord& record) const {
  std::error_code ec;
  // A new sandbox (no record yet; its directory may exist, made by the lock): a good time to tidy.
  if (!fs::exists(file(record.id, kRecordFile), ec)) sweep_deleted();
  TNK_RETURN_IF_ERROR(make_dirs(dir(record.id), 0700));
  return write_file_atomic(file(record.id, kRecordFile), record_to_json(record).dump(2) + "\n", 0600);
}

Status Store::mark_stopped(const std::string& id, Log& log) const {
  TNK_ASSIGN_OR_RETURN(std::optional<FileLock> held, lock_existing(id, log));
  if (!held) return ok_status();  // deleted meanwhile
  TNK_ASSIGN_OR_RETURN(auto record, load(id));
  if (!record) return ok_status();
  record->stopped_at = std::time(nullptr);
  return save(*record);
}

Result<FileLock> Store::lock(const std::string& id, Log& log, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    TNK_RETURN_IF_ERROR(make_dirs(dir(id), 0700));
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    TNK_ASSIGN_OR_RETURN(std::optional<FileLock> held,
                         lock_existing(id, log, std::max(left, std::chrono::milliseconds(0))));
    if (held) return std::move(*held);
    // The holder deleted the sandbox (its directory and lock with it) while we waited: a new one.
  }
}

Result<std::optional<FileLock>> Store::lock_existing(const std::string& id, Log& log,
                                                     std::chrono::milliseconds timeout) const {
  auto held = FileLock::acquire(file(id, kLockFile), timeout,
                                [&] { log.info("waiting for another tnk command to finish with " + id); });
  if (held) return std::optional<FileLock>(std::move(*held));
  if (held.error().sys_errno == ENOENT) return std::optional<FileLock>();  // its directory is gone
  return held.error();
}

Result<std::vector<std::string>> Store::list_ids() const {
  std::vector<std::string> ids;
  std::error_code ec;
  fs::directory_iterator it(root_, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return ids;
    return sys_error(ec.value(), "cannot list " + root_.string());
  }
  for (const auto& entry : it) {
    std::string name = entry.path().filename().string();
    if (entry.is_directory(ec) && !name.starts_with('.')) ids.push_back(name);  // not a delete's leftover
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

namespace {

constexpr std::string_view kDoomedPrefix = ".deleting-";

// fs::remove_all gives up at the first entry another remover took first (ENOENT). A delete cut short
// leaves its helper in the user's range removing the same tree while the next command sweeps it (seen in
// a CI run under load): each goes on until the tree is gone.
void remove_all_beside_others(const fs::path& doomed, std::error_code& ec) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    fs::remove_all(doomed, ec);
    if (!ec || ec.value() != ENOENT) return;
  }
}

// Removes a directory tree; a rootless sandbox's overlay upper directory holds files of the user's
// subordinate range, which only that range's owner (inside a user namespace) may remove.
Status remove_tree(const fs::path& doomed) {
  std::error_code ec;
  remove_all_beside_others(doomed, ec);
  if (ec && (ec.value() == EACCES || ec.value() == EPERM) && ::geteuid() != 0) {
    auto removed = idmap::run_as_range_owner("remove " + doomed.string(), [&doomed]() -> Result<std::string> {
      std::error_code inner;
      remove_all_beside_others(doomed, inner);
      if (inner) return sys_error(inner.value(), "cannot remove " + doomed.string());
      return std::string();
    });
    if (!removed) return removed.error();
    return ok_status();
  }
  if (ec) return sys_error(ec.value(), "cannot remove " + doomed.string());
  return ok_status();
}

}  // namespace

// The directory is renamed away first (atomic, in the same directory), then removed: a delete cut short
// by a kill or a full disk leaves the whole sandbox or none of it, never a record whose overlay or disk
// is half gone (which the next start took for a provisioned sandbox). What such a delete left under
// its doomed name is removed by the next delete, or when a sandbox is created.
Status Store::remove(const std::string& id) const {
  // A disk of its own first: unmounted, its files could not be removed below, and its image is root's.
  TNK_RETURN_IF_ERROR(release_own_disk(dir(id)));
  fs::path doomed = root_ / (std::string(kDoomedPrefix) + id + "." + std::to_string(::getpid()));
  if (::rename(dir(id).c_str(), doomed.c_str()) != 0) {
    if (errno != ENOENT) return sys_error(errno, "cannot rename " + dir(id).string() + " to " + doomed.string());
  } else {
    TNK_RETURN_IF_ERROR(remove_tree(doomed));
  }
  sweep_deleted();
  return ok_status();
}

void Store::sweep_deleted() const {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_, ec)) {
    if (entry.path().filename().string().starts_with(kDoomedPrefix)) (void)remove_tree(entry.path());
  }
}

}  // namespace tnk::state
