// The sandboxes directory: one subdirectory per sandbox id, its record and its lock.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/file_lock.h"
#include "core/log.h"
#include "core/result.h"
#include "state/record.h"

namespace tnk::state {

class Store {
 public:
  explicit Store(std::filesystem::path sandboxes_dir) : root_(std::move(sandboxes_dir)) {}

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path dir(const std::string& id) const { return root_ / id; }
  std::filesystem::path file(const std::string& id, const char* name) const { return root_ / id / name; }

  // nullopt when the sandbox has no record (absent); an error when the record is unreadable or corrupt.
  Result<std::optional<SandboxRecord>> load(const std::string& id) const;
  // Atomic rewrite (temp + fsync + rename); creates the sandbox directory (0700), and then sweeps.
  Status save(const SandboxRecord& record) const;
  // The per-sandbox flock, for a start (which may create the sandbox): makes the sandbox's directory,
  // and starts over on a new one when the holder deleted the sandbox while we waited. Hold it only
  // while state changes, never for a whole session.
  Result<FileLock> lock(const std::string& id, Log& log,
                        std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
  // The same flock for a command on a sandbox that exists (stop, delete, provisioning's bookkeeping,
  // review): nullopt when its directory is gone (it was deleted, before or while we waited), which is
  // never made again here, so that nothing of a deleted sandbox is left behind.
  Result<std::optional<FileLock>> lock_existing(const std::string& id, Log& log,
                                                std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
  // After a stop: stopped_at in the record (under the lock); a missing record is fine.
  Status mark_stopped(const std::string& id, Log& log) const;
  // Ids of every sandbox directory, sorted (not a dot-named leftover of a delete cut short). A missing
  // sandboxes directory is an empty list.
  Result<std::vector<std::string>> list_ids() const;
  // Removes the sandbox directory and everything in it, all or nothing (renamed away first).
  Status remove(const std::string& id) const;
  // Removes what deletes cut short left (best effort): done by remove(), and by save() of a new sandbox.
  void sweep_deleted() const;

 private:
  std::filesystem::path root_;
};

}  // namespace tnk::state
