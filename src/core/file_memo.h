// Values derived from files, remembered with the files' identity (in Paths::memo_dir()):
//  - the hash of the tnk-agent binary, the kernel source package's version (dpkg's database) and gcc's
//    version line, which every vm `tnk sandbox start` needs to name its kernel and base disk (hashing
//    2.4 MB and running dpkg-query and gcc cost ~30 ms of a 0.65 s start under TCG);
//  - the content hash of the installed specs (TNK_SPECS_REV), which every session needs (a third of
//    the command line's own work before `tnk sandbox exec` reaches the sandbox).
// A file's device, inode, size, mtime and ctime (ns) change with any write, chmod or replacement, so a
// remembered value is never used for a changed file.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/result.h"

namespace tnk {

// The value kept in `memo_file` when `inputs` are the files it was computed from, else `compute()`'s
// (then kept, best effort: a memo that cannot be written only costs time). An input that does not
// exist makes the value computed every time.
Result<std::string> memoized(const std::filesystem::path& memo_file, const std::vector<std::filesystem::path>& inputs,
                             const std::function<Result<std::string>()>& compute);

}  // namespace tnk
