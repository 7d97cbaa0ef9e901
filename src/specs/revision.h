// The specs revision (TNK_SPECS_REV, and part of the provision fingerprint): it must change whenever
// the installed specs change (the original kept a stale .git revision after `init --force`, bug 20).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "core/result.h"

namespace tnk::specs {

// Written by install_specs: one line, "git:<7 hex>" (installed from a git URL at that commit) or
// "local" (installed from a directory: the revision is the content hash).
inline constexpr std::string_view kSpecsRevFile = ".specs-rev";

// In order:
//  1. <config_dir>/.specs-rev holding "git:<7 hex>" -> that;
//  2. no .specs-rev, <config_dir>/.git exists and `git -C <dir> rev-parse --short=7 HEAD` works
//     (a config dir that is itself a checkout, as the original's init made it) -> "git:<7 hex>";
//  3. otherwise "sha256:<12 hex>" of the sandbox.d tree (specs_tree_hash), so editing any file there
//     changes the revision.
// The hash of 3. is remembered in `memo_dir` (core/file_memo.h) unless it is empty.
std::string specs_revision(const std::filesystem::path& config_dir, const std::filesystem::path& memo_dir);

// sha256 over the regular files below `dir` (symlinks and .git skipped): one line
// "<sha256 of content>  <relative path>\n" per file in sorted path order, then hashed. 64 hex.
std::string directory_hash(const std::filesystem::path& dir);
// directory_hash(<config_dir>/sandbox.d).
std::string specs_tree_hash(const std::filesystem::path& config_dir);

// `git -C <dir> rev-parse --short=7 HEAD` -> "git:<7 hex>". Fails when dir is not a git checkout.
Result<std::string> git_revision(const std::filesystem::path& dir);

}  // namespace tnk::specs
