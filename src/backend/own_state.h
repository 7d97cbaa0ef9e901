// What a sandbox wrote of its own, as a checkpoint keeps it and a fork starts from (docs/checkpoints.md):
// ns, its overlay's upper layer (its root and home); vm, its disk overlay and the base disk that overlay
// is made on; either, in review mode, its review layer and baseline. Never the project, the record, the
// logs, the sockets, or the host user's network rules.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "context/context.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace tnk::backend {

// Copies the own state of the state directory `from` into `to` (which must not hold it yet),
// copy-on-write where the file system can (cp --reflink=auto), as the owner of the user's range where
// its files belong to it. The base disk is linked, not copied. Returns what was copied: [{"path",
// "bytes", "sha256", "shared"}], sha256 of files up to 16 MiB (null for trees and larger files), shared
// for the linked base disk (whose bytes the copy does not add).
Result<nlohmann::json> copy_own_state(const std::filesystem::path& from, const std::filesystem::path& to);

// Removes the own state of state directory `dir` (as the range's owner where needed).
Status remove_own_state(const std::filesystem::path& dir);

// Renames each part of the own state in `from` into `to`, where it must not be (the same file system).
Status move_own_state(const std::filesystem::path& from, const std::filesystem::path& to);

// Whether the supervised (ns or vm) sandbox `id` runs, by its supervisor's pid file.
bool runs(Context& ctx, const std::string& id);

// The sandbox `id` held still while a copy is made of it: nullopt when it is not running, else the
// connection whose end lets it go on (session::request_pause).
Result<std::optional<UniqueFd>> hold_still(Context& ctx, const std::string& id);

// A vm overlay's header names its base disk by path: after a copy into another state directory, it
// must name that directory's link (`qemu-img rebase -u`). Nothing to do without an overlay.
Status repoint_overlay(const std::filesystem::path& dir);

}  // namespace tnk::backend
